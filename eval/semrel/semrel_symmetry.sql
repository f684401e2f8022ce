-- name: semrel_symmetry
-- description: >-
--   Symmetry M_k (Cao et al. eqs. 1, 15-16) of ANT and SYN, k = 1, 5, 10: per tuple (w, r, v)
--   and prompt mu = [v in top-k L(w, p)] x [w in top-k L(v, p)], averaged over the prompts
--   with both lists, then over the tuples T^r (both words in the shared vocabulary). Humans
--   included. 'macro' = the mean over the two relations, 'micro' = over all tuples.
-- tasks: [relatum]
-- grain: [model, probe, k]
-- requires: [_views.sql]
WITH t AS (
    SELECT m.*, 'semrel/' || lower(relation) AS probe FROM semrel_tuple_ma m
    WHERE kind = 'symmetric'
),
per_relation AS (SELECT model, probe, k, avg(m) AS value, count(*) AS n FROM t GROUP BY ALL)
SELECT model, probe, k, value, n FROM per_relation
UNION ALL
SELECT model, 'macro', k, avg(value), count(*) FROM per_relation GROUP BY model, k
UNION ALL
SELECT model, 'micro', k, avg(m), count(*) FROM t GROUP BY model, k
ORDER BY ALL
