-- name: binary_accuracy_norm
-- description: >-
--   Binary accuracy as lm-evaluation-harness's acc_norm: each label word's or statement's
--   score divided by the characters of its scored text (leading space left out) before the
--   mean over prompts; otherwise as binary_accuracy.
--   Only finished runs (status done); see _normalised.sql.
-- tasks: [binary]
-- grain: [run_id, probe, split]
-- requires: [_normalised.sql]
SELECT run_id, probe, split, value, n
FROM normalised_accuracy WHERE task = 'binary' AND normalisation = 'per_char'
ORDER BY ALL
