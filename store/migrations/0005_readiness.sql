-- A model's readiness (internal/readiness): what its config.json and the
-- Hub's safetensors counts say about running it on TPUs, as JSON; the
-- revision and rules version it was computed for; and whether it read
-- config.json itself (1) or only the Hub listing's summary of it (0).
ALTER TABLE models ADD COLUMN readiness TEXT;
ALTER TABLE models ADD COLUMN readiness_sha TEXT NOT NULL DEFAULT '';
ALTER TABLE models ADD COLUMN readiness_version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE models ADD COLUMN readiness_full INTEGER NOT NULL DEFAULT 0 CHECK (readiness_full IN (0, 1));
