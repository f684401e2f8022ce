-- name: semrel_audc
-- description: >-
--   Area under the distinguishability curve (a reconstruction of Cao et al.'s AuDC): per agent
--   and ordered relation pair (probe = r, other = s), the mean of D_k(r, s) over k = 1..10
--   (see semrel_distinguishability; at most 1). The row probe 'all', other 'all' is the
--   agent's AuDC: the sum over the pairs (n = pairs; at most 30 when all 30 ordered pairs have
--   probes). Shared views: eval/semrel/_views.sql.
-- tasks: [relatum]
-- grain: [model, probe, other]
-- requires: [_views.sql]
WITH curve AS (                   -- D_k per pair and k
    SELECT model, probe, other, k, avg(distinguished::INTEGER) AS d, count(*) AS n
    FROM semrel_probe_d
    GROUP BY ALL
),
pairs AS (
    SELECT model, probe, other, avg(d) AS value, max(n) AS n
    FROM curve
    GROUP BY ALL
)
SELECT model, probe, other, value, n FROM pairs
UNION ALL
SELECT model, 'all', 'all', sum(value), count(*) FROM pairs GROUP BY model
ORDER BY ALL
