-- name: choice_accuracy_norm
-- description: >-
--   lm-evaluation-harness's acc_norm: multiple choice accuracy with each candidate's score
--   divided by the characters of its scored text (leading space left out) before the mean over
--   prompts; otherwise as choice_accuracy. Runs written before n_chars was recorded are left
--   out.
--   Only finished runs (status done); see _normalised.sql.
-- tasks: [choice]
-- grain: [run_id, probe, split]
-- requires: [_normalised.sql]
SELECT run_id, probe, split, value, n
FROM normalised_accuracy WHERE task = 'choice' AND normalisation = 'per_char'
ORDER BY ALL
