-- name: semrel_prototypicality
-- description: >-
--   Prototypicality P (Cao et al. eqs. 20-23) of a model against the humans on the section 6.2
--   probe set (HYP, HOL, ANT, SYN; human R < 1; human answers all in the shared vocabulary):
--   per probe 1/2 [top-1 equal] + 1/2 E(L_k(m), L_k(h)), k = the human list's length; the mean
--   over the word's prompts, then over words. 'macro' = over relations, 'micro' = over words.
-- tasks: [relatum]
-- grain: [model, probe]
-- requires: [_views.sql, _prototypicality.sql]
WITH per_word AS (
    SELECT model, probe, word, avg(p) AS p FROM semrel_probe_p GROUP BY ALL
),
per_relation AS (SELECT model, probe, avg(p) AS value, count(*) AS n FROM per_word GROUP BY ALL)
SELECT model, probe, value, n FROM per_relation
UNION ALL
SELECT model, 'macro', avg(value), count(*) FROM per_relation GROUP BY model
UNION ALL
SELECT model, 'micro', avg(p), count(*) FROM per_word GROUP BY model
ORDER BY ALL
