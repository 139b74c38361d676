-- A causal LM probed in full mode with its own tokenizer reports the greedy
-- continuation of the harness's fixed prompt: JSON compat.Continuation
-- ({"prompt", "text"}), NULL when the probe has none. It is read with the
-- model's page and history, not with the lists.
ALTER TABLE results ADD COLUMN continuation TEXT;
