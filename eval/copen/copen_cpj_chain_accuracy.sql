-- name: copen_cpj_chain_accuracy
-- description: >-
--   CPJ chain-level accuracy: the statements of one conceptual property chain (same chain_id in
--   the released file, two or more labelled statements) count as one item, right only when every
--   statement is judged right (the gold class's best label word scores strictly higher than the
--   other class's; scores as in copen_accuracy). Hidden labels and statements without a chain
--   are left out.
-- tasks: [binary]
-- grain: [run_id, probe, split]
-- requires: [_views.sql]
WITH candidate_scores AS (
    SELECT run_id, probe, split, instance_id, label, score
    FROM copen_candidate_scores WHERE probe = 'copen/cpj'
),
judged AS (
    SELECT c.run_id, c.probe, c.split, c.instance_id,
           json_extract_string(i.fields, '$.chain_id') AS chain_id,
           coalesce(max(c.score) FILTER (WHERE c.label = lower(i.gold[1]))
                    > coalesce(max(c.score) FILTER (WHERE c.label <> lower(i.gold[1])),
                               '-inf'::DOUBLE), false) AS correct
    FROM candidate_scores c JOIN instances i USING (probe, split, instance_id)
    WHERE len(i.gold) > 0 AND json_extract_string(i.fields, '$.chain_id') IS NOT NULL
    GROUP BY ALL
),
chains AS (
    SELECT run_id, probe, split, chain_id, bool_and(correct) AS all_correct
    FROM judged
    GROUP BY ALL
    HAVING count(*) >= 2
)
SELECT run_id, probe, split, avg(CASE WHEN all_correct THEN 1.0 ELSE 0.0 END) AS value,
       count(*) AS n
FROM chains
GROUP BY ALL
ORDER BY ALL
