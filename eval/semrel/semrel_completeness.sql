-- name: semrel_completeness
-- description: >-
--   Completeness C (Cao et al.) = R@k: per probe (instance x prompt), |top k answers ∩ relatum
--   set| / k with k = min(set size, list length) (0 for an empty list), averaged per agent and
--   relation probe. Sets limited to the models' shared vocabulary, model lists filtered to it
--   and re-ranked (human lists are not); instances with an empty limited set are left out.
--   Extra rows: probe 'macro' = the mean over the relations (n = relations), 'micro' = pooled
--   over all probes. Shared views: eval/semrel/_views.sql.
-- tasks: [relatum]
-- grain: [model, probe]
-- requires: [_views.sql]
WITH per_relation AS (
    SELECT model, probe, avg(c) AS value, count(*) AS n
    FROM semrel_probe_sc
    GROUP BY ALL
)
SELECT model, probe, value, n FROM per_relation
UNION ALL
SELECT model, 'macro', avg(value), count(*) FROM per_relation GROUP BY model
UNION ALL
SELECT model, 'micro', avg(c), count(*) FROM semrel_probe_sc GROUP BY model
ORDER BY ALL
