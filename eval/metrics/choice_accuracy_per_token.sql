-- name: choice_accuracy_per_token
-- description: >-
--   Multiple choice accuracy with each candidate's score divided by its token count (the
--   mean log-probability per token) before the mean over prompts; otherwise as
--   choice_accuracy (the best gold candidate must score strictly highest).
--   Only finished runs (status done); see _normalised.sql.
-- tasks: [choice]
-- grain: [run_id, probe, split]
-- requires: [_normalised.sql]
SELECT run_id, probe, split, value, n
FROM normalised_accuracy WHERE task = 'choice' AND normalisation = 'per_token'
ORDER BY ALL
