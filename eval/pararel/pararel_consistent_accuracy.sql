-- name: pararel_consistent_accuracy
-- description: >-
--   ParaRel consistent accuracy (the authors' lama_group_acc): per relation, the share of facts
--   whose answer is the gold object under every pattern (no a/an filter, as the authors').
--   relation = 'all': the mean over relations, `pooled` over every fact.
-- tasks: [choice]
-- grain: [run_id, probe, split, relation]
-- requires: [_views.sql]
-- items: _pararel_consistent_accuracy_items.sql
WITH r AS (
  SELECT run_id, probe, split, relation, avg(consistent_correct) AS value, count(*) AS n,
         avg(consistent_correct) AS pooled
  FROM pararel_facts GROUP BY ALL)
SELECT * FROM r
UNION ALL
SELECT run_id, probe, split, 'all', avg(value), sum(n), sum(pooled * n) / sum(n)
FROM r GROUP BY run_id, probe, split
ORDER BY ALL
