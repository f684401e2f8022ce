-- name: pararel_majority_baseline
-- description: >-
--   The paper's majority baseline on the same facts (the authors' create_majority_baseline):
--   every pattern answers the relation's most frequent object, so its consistency is 1 and its
--   accuracy and consistent accuracy are the share of facts with that object as gold. Per probe
--   and relation of the exported facts (no model); relation = 'all': the mean over relations.
-- tasks: [choice]
-- grain: [probe, split, relation]
-- requires: [_views.sql]
WITH r AS (
  SELECT probe, split, relation, any_value(majority) AS majority, avg(correct) AS value,
         1.0 AS consistency, avg(correct) AS consistent_accuracy, count(*) AS n
  FROM pararel_majority_facts GROUP BY ALL)
SELECT * FROM r
UNION ALL
SELECT probe, split, 'all', NULL, avg(value), 1.0, avg(consistent_accuracy), sum(n)
FROM r GROUP BY probe, split
ORDER BY ALL
