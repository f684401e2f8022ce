-- name: semrel_oor_rate
-- description: >-
--   Out-of-relatum (OOR) rate: the share of probes (instance x prompt) whose top answer is in
--   none of the target word's six relatum sets (semrel/relata, limited to the models' shared
--   vocabulary), per agent and relation probe. Probes of instances with an empty limited set
--   and empty answer lists are left out; model lists are filtered and re-ranked, human lists
--   are not (so a human answer outside the shared vocabulary is OOR). Extra rows: probe
--   'macro' = the mean over the relations (n = relations), 'micro' = pooled over all probes.
--   Shared views: eval/semrel/_views.sql.
-- tasks: [relatum]
-- grain: [model, probe]
-- requires: [_views.sql]
WITH related AS (                 -- every relatum of a word, any relation
    SELECT word, list(relatum) AS relata FROM semrel_sets GROUP BY word
),
per_probe AS (
    SELECT p.model, p.probe,
           NOT list_contains(coalesce(r.relata, []::VARCHAR[]), p.answers[1]) AS oor
    FROM semrel_probes p LEFT JOIN related r USING (word)
    WHERE len(p.gold) > 0 AND len(p.answers) > 0
),
per_relation AS (
    SELECT model, probe, avg(oor::INTEGER) AS value, count(*) AS n FROM per_probe GROUP BY ALL
)
SELECT model, probe, value, n FROM per_relation
UNION ALL
SELECT model, 'macro', avg(value), count(*) FROM per_relation GROUP BY model
UNION ALL
SELECT model, 'micro', avg(oor::INTEGER), count(*) FROM per_probe GROUP BY model
ORDER BY ALL
