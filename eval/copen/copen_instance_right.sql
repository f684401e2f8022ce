-- name: copen_instance_right
-- description: >-
--   Per run and labelled instance of CSJ, CPJ and CiC, 1 when it is right under the
--   copen_accuracy rule (the gold candidate, CPJ the best label of the gold class, scores
--   strictly higher than every other; a tie is wrong), else 0: the per-instance values on
--   which the report compares two models on the same instances (McNemar's exact test).
-- tasks: [choice, binary]
-- grain: [run_id, probe, split, instance_id]
-- requires: [_views.sql]
-- plot: false
SELECT c.run_id, c.probe, c.split, c.instance_id,
       CASE WHEN max(c.score) FILTER (WHERE list_contains(
                     list_transform(i.gold, lambda g: lower(g)), c.label))
                 > coalesce(max(c.score) FILTER (WHERE NOT list_contains(
                     list_transform(i.gold, lambda g: lower(g)), c.label)), '-inf'::DOUBLE)
            THEN 1.0 ELSE 0.0 END AS value
FROM copen_candidate_scores c JOIN instances i USING (probe, split, instance_id)
WHERE len(i.gold) > 0
GROUP BY ALL
ORDER BY ALL
