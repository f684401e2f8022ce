-- name: choice_accuracy_norm
-- description: >-
--   lm-evaluation-harness's acc_norm: multiple choice accuracy with each candidate's score
--   divided by the characters of its scored text (leading space left out) before the mean over
--   prompts; otherwise as choice_accuracy. Runs written before n_chars was recorded are left
--   out.
--   Only finished runs (status done); see _normalised.sql.
-- tasks: [choice]
-- grain: [run_id, probe, split]
-- plot: false
-- requires: [_normalised.sql]
SELECT run_id, probe, split,
       avg(CASE WHEN per_char THEN 1.0 ELSE 0.0 END) AS value,
       count(*) AS n
FROM choice_normalised
WHERE task = 'choice' AND per_char IS NOT NULL
GROUP BY ALL
ORDER BY ALL
