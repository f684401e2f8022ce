-- name: copen_cpj_false_positive_share
-- description: >-
--   CPJ: the share of errors that are false positives (a false statement judged true), out of
--   all wrongly judged labelled statements (n). Judgments as in copen_cpj_chain_accuracy; a tie
--   between true and false is an error of the gold class's opposite. Runs without errors give
--   no row.
-- tasks: [binary]
-- grain: [run_id, probe, split]
-- requires: [_views.sql]
WITH candidate_scores AS (
    SELECT run_id, probe, split, instance_id, label, score
    FROM copen_candidate_scores WHERE probe = 'copen/cpj'
),
judged AS (
    SELECT c.run_id, c.probe, c.split, c.instance_id, lower(i.gold[1]) AS gold,
           coalesce(max(c.score) FILTER (WHERE c.label = lower(i.gold[1]))
                    > coalesce(max(c.score) FILTER (WHERE c.label <> lower(i.gold[1])),
                               '-inf'::DOUBLE), false) AS correct
    FROM candidate_scores c JOIN instances i USING (probe, split, instance_id)
    WHERE len(i.gold) > 0
    GROUP BY ALL
)
SELECT run_id, probe, split, avg(CASE WHEN gold = 'false' THEN 1.0 ELSE 0.0 END) AS value,
       count(*) AS n
FROM judged
WHERE NOT correct
GROUP BY ALL
ORDER BY ALL
