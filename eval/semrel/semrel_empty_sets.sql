-- name: semrel_empty_sets
-- description: >-
--   Instances of each relation probe whose relatum set is empty once limited to the
--   vocabulary shared by the compared models (value; these are left out of every semrel
--   metric but prototypicality and the symmetry/asymmetry trick probes); raw_empty = empty
--   before limiting; n = instances. Shared views: eval/semrel/_views.sql.
-- tasks: [relatum]
-- grain: [probe]
-- plot: false
-- requires: [_views.sql]
SELECT probe, count(*) FILTER (WHERE len(gold) = 0) AS value, count(*) AS n,
       count(*) FILTER (WHERE len(raw_gold) = 0) AS raw_empty
FROM semrel_instances
GROUP BY ALL
ORDER BY ALL
