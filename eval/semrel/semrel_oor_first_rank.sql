-- name: semrel_oor_first_rank
-- description: >-
--   Mean rank of the first answer that is not out-of-relatum (i.e. in one of the target word's
--   six limited relatum sets) per agent and relation probe, over probes (instance x prompt)
--   whose list holds such an answer; excluded = probes whose list holds none (left out of the
--   mean). Ranks count the model's filtered, re-ranked list; probes of instances with an empty
--   limited set are left out. Extra rows: probe 'macro' = the mean over the relations (n =
--   relations), 'micro' = pooled over all probes. Shared views: eval/semrel/_views.sql.
-- tasks: [relatum]
-- grain: [model, probe]
-- requires: [_views.sql]
WITH related AS (                 -- every relatum of a word, any relation
    SELECT word, list(relatum) AS relata FROM semrel_sets GROUP BY word
),
per_probe AS (
    SELECT p.model, p.probe, p.answers, coalesce(r.relata, []::VARCHAR[]) AS relata
    FROM semrel_probes p LEFT JOIN related r USING (word)
    WHERE len(p.gold) > 0
),
ranks AS (
    SELECT model, probe,
           list_position(list_transform(answers, lambda a: list_contains(relata, a)), true)
               AS first_rank
    FROM per_probe
),
per_relation AS (
    SELECT model, probe, avg(first_rank) AS value, count(first_rank) AS n,
           count(*) - count(first_rank) AS excluded
    FROM ranks GROUP BY ALL
)
SELECT model, probe, value, n, excluded FROM per_relation
UNION ALL
SELECT model, 'macro', avg(value), count(value), sum(excluded) FROM per_relation GROUP BY model
UNION ALL
SELECT model, 'micro', avg(first_rank), count(first_rank), count(*) - count(first_rank)
FROM ranks GROUP BY model
ORDER BY ALL
