-- name: semrel_asymmetry
-- description: >-
--   Asymmetry A_k (Cao et al. eqs. 2, 17-18) of HYP, HPO, HOL, MER, k = 1, 5, 10: per tuple
--   (w, r, v) and prompt alpha = [v in top-k L(w, p)] x [w not in top-k L(v, p)] (L(v, p): the
--   trick probe semrel/<r>-trick, or semrel/<r> when v is a target too), averaged over prompts,
--   then over tuples. Models only: the paper does not score humans on asymmetry (section 5.2).
-- tasks: [relatum]
-- grain: [model, probe, k]
-- requires: [_views.sql]
WITH t AS (
    SELECT m.*, 'semrel/' || lower(relation) AS probe FROM semrel_tuple_ma m
    WHERE kind = 'asymmetric' AND NOT is_human
),
per_relation AS (SELECT model, probe, k, avg(a) AS value, count(*) AS n FROM t GROUP BY ALL)
SELECT model, probe, k, value, n FROM per_relation
UNION ALL
SELECT model, 'macro', k, avg(value), count(*) FROM per_relation GROUP BY model, k
UNION ALL
SELECT model, 'micro', k, avg(a), count(*) FROM t GROUP BY model, k
ORDER BY ALL
