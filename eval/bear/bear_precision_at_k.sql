-- name: bear_precision_at_k
-- description: >-
--   lm-pub-quiz's precision@k per relation (`PrecisionAtK`): the share of the relation's
--   (instance, template) rows whose gold answer ranks k-th or better in lm-pub-quiz's ranking
--   (a stable sort by summed score, descending: ties keep answer-space order), for k = 1 to the
--   answer-space size (k = 1 is the accuracy).
-- tasks: [choice]
-- grain: [run_id, probe, split, relation, k]
-- plot: false
-- requires: [_views.sql]
WITH r AS (SELECT *, range(1, n_answers + 1) AS ks FROM bear_rows),
k AS (SELECT run_id, probe, split, relation, instance_id, gold_rank, unnest(ks) AS k FROM r)
SELECT run_id, probe, split, relation, k,
       avg(CASE WHEN gold_rank <= k THEN 1.0 ELSE 0.0 END) AS value, count(*) AS n
FROM k
GROUP BY ALL
ORDER BY ALL
