-- name: copen_random_baseline
-- description: >-
--   The random baseline (the report's "Random" row): the expected accuracy of picking a
--   candidate uniformly, 1/k for an instance with k candidates (CSJ 1/21, CPJ 1/2, CiC 1 over
--   the concepts on its chains), averaged over labelled instances; column mrr is the expected
--   reciprocal rank of a random order, (1 + 1/2 + ... + 1/k)/k.
-- tasks: [choice, binary]
-- grain: [probe, split]
-- plot: false
SELECT probe, split,
       avg(1.0 / len(candidates)) AS value,
       avg(list_sum(list_transform(range(1, len(candidates) + 1), lambda r: 1.0 / r))
           / len(candidates)) AS mrr,
       count(*) AS n
FROM instances
WHERE probe IN ('copen/csj', 'copen/cpj', 'copen/cic') AND len(gold) > 0
GROUP BY ALL
ORDER BY ALL
