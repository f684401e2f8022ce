-- name: copen_cpj_chain_accuracy
-- description: >-
--   CPJ chain-level accuracy: the statements of one conceptual property chain (same chain_id in
--   the released file, two or more labelled statements) count as one item, right only when every
--   statement is judged right (true vs false as in copen_accuracy; a tie is wrong). Hidden labels
--   and statements without a chain are left out.
-- tasks: [binary]
-- grain: [run_id, probe, split]
WITH class_scores AS (
    SELECT s.run_id, s.probe, s.split, s.instance_id, lower(coalesce(s.label, s.candidate)) AS label,
           max(s.score / greatest(s.n_tokens, 1)) AS score  -- the best word of each class
    FROM (SELECT run_id, probe, split, instance_id, candidate, label,
                 avg(score / greatest(n_tokens, 1)) * greatest(1, 1) AS score, 1 AS n_tokens
          FROM scores GROUP BY ALL) s
    JOIN runs r USING (run_id)
    WHERE r.probe = 'copen/cpj' AND r.status = 'done'
    GROUP BY ALL
),
judged AS (
    SELECT c.run_id, c.probe, c.split, c.instance_id,
           json_extract_string(i.fields, '$.chain_id') AS chain_id,
           max(c.score) FILTER (WHERE c.label = lower(i.gold[1]))
               > coalesce(max(c.score) FILTER (WHERE c.label <> lower(i.gold[1])),
                          '-inf'::DOUBLE) AS correct
    FROM class_scores c JOIN instances i USING (probe, split, instance_id)
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
