-- name: hyperlex_spearman
-- description: >-
--   Spearman's rho between the mean over prompts of the hypernym candidate's
--   log-probability and HyperLex's human score of "X is a type of Y" (the instance field
--   score, 0-6), over the instances of a choice probe that selects ?score (research/hyperlex-graded). Ties get
--   their average rank (as scipy.stats.spearmanr). Only finished runs (status done).
-- tasks: [choice]
-- grain: [run_id, probe, split]
-- plot: false
WITH pairs AS (                   -- one row per (run, instance): model score, human score
    SELECT s.run_id, s.probe, s.split, s.instance_id,
           avg(s.score) AS model,
           any_value(TRY_CAST(json_extract_string(i.fields, '$.score') AS DOUBLE)) AS human
    FROM scores s JOIN runs r USING (run_id)
    JOIN instances i ON i.probe = s.probe AND i.split = s.split AND i.instance_id = s.instance_id
    WHERE r.task = 'choice' AND r.status = 'done'
    GROUP BY ALL
),
ranked AS (                       -- average ranks within each (run, probe, split)
    SELECT run_id, probe, split,
           rank() OVER (PARTITION BY run_id, probe, split ORDER BY model)
               + (count(*) OVER (PARTITION BY run_id, probe, split, model) - 1) / 2.0 AS r_model,
           rank() OVER (PARTITION BY run_id, probe, split ORDER BY human)
               + (count(*) OVER (PARTITION BY run_id, probe, split, human) - 1) / 2.0 AS r_human
    FROM pairs
    WHERE model IS NOT NULL AND human IS NOT NULL
)
SELECT run_id, probe, split, corr(r_model, r_human) AS value, count(*) AS n
FROM ranked
GROUP BY ALL
HAVING count(*) >= 3
ORDER BY ALL
