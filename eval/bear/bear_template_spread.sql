-- name: bear_template_spread
-- description: >-
--   How much a relation's BEAR accuracy depends on the template: the largest minus the
--   smallest per-template accuracy (bear_accuracy_template), with the minimum, the maximum
--   and the population standard deviation over the relation's templates beside it.
-- tasks: [choice]
-- grain: [run_id, probe, split, relation]
-- requires: [_views.sql]
WITH t AS (
  SELECT run_id, probe, split, relation, prompt_id, avg(correct) AS acc, count(*) AS n
  FROM bear_rows GROUP BY ALL)
SELECT run_id, probe, split, relation, max(acc) - min(acc) AS value, min(acc) AS template_min,
       max(acc) AS template_max, stddev_pop(acc) AS template_sd, count(*) AS templates,
       max(n) AS n
FROM t
GROUP BY ALL
ORDER BY ALL
