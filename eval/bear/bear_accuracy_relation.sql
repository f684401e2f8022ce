-- name: bear_accuracy_relation
-- description: >-
--   BEAR accuracy (P@1) per relation, as lm-pub-quiz's `Accuracy` metric: the share of the
--   relation's (instance, template) rows whose best-scored answer (summed log-likelihood, a
--   tie to the earlier answer of the answer space) is the gold answer.
-- tasks: [choice]
-- grain: [run_id, probe, split, relation]
-- requires: [_views.sql]
-- items: _bear_accuracy_relation_items.sql
SELECT run_id, probe, split, relation, avg(correct) AS value,
       count(DISTINCT instance_id) AS n, count(*) AS support
FROM bear_rows
GROUP BY ALL
ORDER BY ALL
