-- name: bear_accuracy_domain
-- description: >-
--   BEAR accuracy per domain exactly as lm-pub-quiz computes it (`get_metrics("accuracy",
--   accumulate="domains")`, divide_support=True): each relation is counted in every domain of
--   relation_info.json it has, with weight = its support (instances x templates) divided by
--   its number of domains, and a domain's value is the weighted mean of its relations'
--   accuracies. So a relation with two domains weighs half as much in each as a
--   single-domain relation of the same size; support is the domain's summed weight.
-- tasks: [choice]
-- grain: [run_id, probe, split, domain]
-- requires: [_views.sql]
WITH rel AS (
  SELECT run_id, probe, split, relation, avg(correct) AS acc, count(*) AS support,
         count(DISTINCT instance_id) AS n
  FROM bear_rows GROUP BY ALL)
SELECT r.run_id, r.probe, r.split, d.domain,
       sum(r.acc * r.support / d.n_domains) / sum(r.support / d.n_domains) AS value,
       sum(r.n) AS n, sum(r.support / d.n_domains) AS support, count(*) AS relations
FROM rel r JOIN bear_relation_domains d USING (probe, relation)
GROUP BY ALL
ORDER BY ALL
