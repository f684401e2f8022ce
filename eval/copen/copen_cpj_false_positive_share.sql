-- name: copen_cpj_false_positive_share
-- description: >-
--   CPJ: the share of errors that are false positives (a false statement judged true), out of
--   all wrongly judged labelled statements (n). Judgments of copen_predictions (a tie between
--   true and false is judged false, as in the authors' code). Runs without errors give no row.
-- tasks: [binary]
-- grain: [run_id, probe, split]
-- requires: [_views.sql]
WITH judged AS (
    SELECT p.run_id, p.probe, p.split, p.instance_id, lower(i.gold[1]) AS gold,
           p.predicted_label = lower(i.gold[1]) AS correct
    FROM copen_predictions p JOIN instances i USING (probe, split, instance_id)
    WHERE p.probe = 'copen/cpj' AND len(i.gold) > 0
)
SELECT run_id, probe, split, avg(CASE WHEN gold = 'false' THEN 1.0 ELSE 0.0 END) AS value,
       count(*) AS n
FROM judged
WHERE NOT correct
GROUP BY ALL
ORDER BY ALL
