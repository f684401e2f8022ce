-- name: bear_chance
-- description: >-
--   Chance on BEAR: the expected accuracy of a uniform pick from each instance's answer space,
--   the mean of 1 / answer-space size over the exported instances, per relation and over all
--   relations (relation "all", every instance weighing the same, as in bear_accuracy).
-- tasks: [choice]
-- grain: [probe, split, relation]
-- plot: false
WITH i AS (
  SELECT probe, split, fields->>'relation' AS relation, 1.0 / len(candidates) AS p
  FROM instances WHERE probe LIKE 'bear/%' AND len(candidates) > 0)
SELECT probe, split, relation, avg(p) AS value, count(*) AS n FROM i GROUP BY ALL
UNION ALL
SELECT probe, split, 'all', avg(p), count(*) FROM i GROUP BY probe, split
ORDER BY ALL
