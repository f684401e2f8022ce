-- name: semrel_soundness
-- description: >-
--   Soundness S (Cao et al.) = P@1: the share of probes (instance x prompt) whose top answer is
--   in the target word's relatum set, per agent (model; 'human' for people) and relation probe.
--   Sets are limited to the vocabulary shared by the compared models, model lists are filtered
--   to it and re-ranked (human lists are not); instances whose limited set is empty are left
--   out (counted by semrel_empty_sets). Extra rows: probe 'macro' = the mean over the
--   relations (n = relations), probe 'micro' = pooled over all probes. One run per agent and
--   probe (the latest done one). Shared views: eval/semrel/_views.sql.
-- tasks: [relatum]
-- grain: [model, probe]
-- requires: [_views.sql]
WITH per_relation AS (
    SELECT model, probe, avg(s_hit) AS value, count(*) AS n
    FROM semrel_probe_sc
    GROUP BY ALL
)
SELECT model, probe, value, n FROM per_relation
UNION ALL
SELECT model, 'macro', avg(value), count(*) FROM per_relation GROUP BY model
UNION ALL
SELECT model, 'micro', avg(s_hit), count(*) FROM semrel_probe_sc GROUP BY model
ORDER BY ALL
