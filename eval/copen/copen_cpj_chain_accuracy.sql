-- name: copen_cpj_chain_accuracy
-- description: >-
--   CPJ chain-level accuracy: the statements of one conceptual property chain (same chain_id in
--   the released file, two or more labelled statements; a chain of one statement is left out)
--   count as one item, right only when every statement is judged right (the prediction of
--   copen_predictions, a tie judged false as in the authors' code, equals the gold class).
--   Hidden labels and statements without a chain are left out. The report reads the zero-shot
--   runs of the answer part here (BART: all), the part of the authors' merge_result.
-- tasks: [binary]
-- grain: [run_id, probe, split]
-- requires: [_views.sql]
WITH judged AS (
    SELECT p.run_id, p.probe, p.split, p.instance_id,
           json_extract_string(i.fields, '$.chain_id') AS chain_id,
           p.predicted_label = lower(i.gold[1]) AS correct
    FROM copen_predictions p JOIN instances i USING (probe, split, instance_id)
    WHERE p.probe = 'copen/cpj' AND len(i.gold) > 0
      AND json_extract_string(i.fields, '$.chain_id') IS NOT NULL
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
