-- name: binary_accuracy_norm
-- description: >-
--   Binary accuracy as lm-evaluation-harness's acc_norm: each label word's or statement's
--   score divided by the characters of its scored text (leading space left out) before the
--   mean over prompts; otherwise as binary_accuracy.
--   Only finished runs (status done); see _normalised.sql.
-- tasks: [binary]
-- grain: [run_id, probe, split]
-- plot: false
-- requires: [_normalised.sql]
SELECT run_id, probe, split,
       avg(CASE WHEN per_char THEN 1.0 ELSE 0.0 END) AS value,
       count(*) AS n
FROM choice_normalised
WHERE task = 'binary' AND per_char IS NOT NULL
GROUP BY ALL
ORDER BY ALL
