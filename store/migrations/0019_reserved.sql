-- Placeholder for the migration number reserved for another branch: the
-- runner wants consecutive versions, and this branch took 0020. Delete this
-- file when the real 0019 is merged (or renumber 0020 to 0019 if none is).
SELECT 1;
