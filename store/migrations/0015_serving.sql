-- 0015 (issue 40): what each vllm-torchtpu release declares it serves: the
-- architectures its vLLM's model registry lists, read from its wheel
-- (internal/serving), and what it serves each as. Kept per release, so a
-- new pin is read once and the old one stays.
CREATE TABLE serving_registries (
	version      TEXT PRIMARY KEY, -- vllm-torchtpu's version
	vllm_version TEXT NOT NULL,    -- the vLLM it carries ('' when unknown)
	read_at      INTEGER NOT NULL  -- unix nanoseconds
);
CREATE TABLE serving_archs (
	version TEXT NOT NULL REFERENCES serving_registries (version) ON DELETE CASCADE,
	arch    TEXT NOT NULL,
	kind    TEXT NOT NULL CHECK (kind IN ('generation', 'pooling', 'multimodal')),
	PRIMARY KEY (version, arch)
) WITHOUT ROWID;
