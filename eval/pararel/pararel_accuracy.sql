-- name: pararel_accuracy
-- description: >-
--   ParaRel accuracy (the authors' lama_acc): per relation, the share of facts whose answer
--   under pattern 0 (the LAMA pattern) is the gold object; `pattern_accuracy`: the share of
--   (fact, pattern) answers right over every pattern; `consistent_wrong`: the share of facts
--   given one wrong answer under every pattern (the authors' group-unacc). No a/an filter (as
--   the authors'). relation = 'all': the mean over relations, `pooled` over every fact.
-- tasks: [choice]
-- grain: [run_id, probe, split, relation]
-- requires: [_views.sql]
-- items: _pararel_accuracy_items.sql
WITH r AS (
  SELECT run_id, probe, split, relation, avg(lama_correct) AS value,
         avg(pattern_accuracy) AS pattern_accuracy, avg(consistent_wrong) AS consistent_wrong,
         count(*) AS n, avg(lama_correct) AS pooled
  FROM pararel_facts GROUP BY ALL)
SELECT * FROM r
UNION ALL
SELECT run_id, probe, split, 'all', avg(value), avg(pattern_accuracy), avg(consistent_wrong),
       sum(n), sum(pooled * n) / sum(n)
FROM r GROUP BY run_id, probe, split
ORDER BY ALL
