-- name: copen_hidden_labels
-- description: >-
--   Instances whose label is hidden (-1 in the released test files): value = how many, n = all
--   instances of the probe and split. They are scored but left out of every other metric.
-- tasks: [choice, binary]
-- grain: [probe, split]
-- plot: false
SELECT probe, split, count(*) FILTER (WHERE len(gold) = 0) AS value, count(*) AS n
FROM instances
WHERE probe IN ('copen/csj', 'copen/cpj', 'copen/cic')
GROUP BY ALL
ORDER BY ALL
