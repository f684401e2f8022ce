-- name: choice_accuracy_per_token
-- description: >-
--   Multiple choice accuracy with each candidate's score divided by its token count (the
--   mean log-probability per token) before the mean over prompts; otherwise as
--   choice_accuracy (the best gold candidate must score strictly highest).
--   Only finished runs (status done); see _normalised.sql.
-- tasks: [choice]
-- grain: [run_id, probe, split]
-- plot: false
-- requires: [_normalised.sql]
SELECT run_id, probe, split,
       avg(CASE WHEN per_token THEN 1.0 ELSE 0.0 END) AS value,
       count(*) AS n
FROM choice_normalised
WHERE task = 'choice' AND per_token IS NOT NULL
GROUP BY ALL
ORDER BY ALL
