-- name: binary_accuracy_per_token
-- description: >-
--   Binary accuracy with each label word's or statement's score divided by its token count
--   before the mean over prompts; otherwise as binary_accuracy.
--   Only finished runs (status done); see _normalised.sql.
-- tasks: [binary]
-- grain: [run_id, probe, split]
-- plot: false
-- requires: [_normalised.sql]
SELECT run_id, probe, split,
       avg(CASE WHEN per_token THEN 1.0 ELSE 0.0 END) AS value,
       count(*) AS n
FROM choice_normalised
WHERE task = 'binary' AND per_token IS NOT NULL
GROUP BY ALL
ORDER BY ALL
