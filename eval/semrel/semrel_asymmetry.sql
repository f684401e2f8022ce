-- name: semrel_asymmetry
-- description: >-
--   Asymmetry A_k (Cao et al.) of the asymmetric relations (hypernymy, hyponymy, holonymy,
--   meronymy), k = 1, 5, 10: over tuples (w, r, v) of semrel/tuples (both words in the models'
--   shared vocabulary) and prompts for which the trick probe (the agent's list on semrel/<r>
--   whose target is v, same prompt) exists, the share whose top k does NOT hold w. Model lists
--   filtered to the shared vocabulary and re-ranked. Extra rows: probe 'macro' = the mean over
--   the four relations (n = relations), 'micro' = pooled over their tuples x prompts. Shared
--   views: eval/semrel/_views.sql.
-- tasks: [relatum]
-- grain: [model, probe, k]
-- requires: [_views.sql]
WITH per_relation AS (
    SELECT model, probe, k, avg((NOT hit)::INTEGER) AS value, count(*) AS n
    FROM semrel_trick
    WHERE kind = 'asymmetric'
    GROUP BY ALL
)
SELECT model, probe, k, value, n FROM per_relation
UNION ALL
SELECT model, 'macro', k, avg(value), count(*) FROM per_relation GROUP BY model, k
UNION ALL
SELECT model, 'micro', k, avg((NOT hit)::INTEGER), count(*) FROM semrel_trick
WHERE kind = 'asymmetric' GROUP BY model, k
ORDER BY ALL
