-- name: binary_accuracy_per_token
-- description: >-
--   Binary accuracy with each label word's or statement's score divided by its token count
--   before the mean over prompts; otherwise as binary_accuracy.
--   Only finished runs (status done); see _normalised.sql.
-- tasks: [binary]
-- grain: [run_id, probe, split]
-- requires: [_normalised.sql]
SELECT run_id, probe, split, value, n
FROM normalised_accuracy WHERE task = 'binary' AND normalisation = 'per_token'
ORDER BY ALL
