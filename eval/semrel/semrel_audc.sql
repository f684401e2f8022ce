-- name: semrel_audc
-- description: >-
--   AuDC (Cao et al. eqs. 27-28): the integral over p in [0, 1] of eta(p) = the number of
--   ordered pairs with D(r, s) > p. Since D is in [0, 1], the integral of [D > p] is D, so
--   AuDC = the sum of D over the pairs (at most 30); n = pairs with a D.
-- tasks: [relatum]
-- grain: [model]
-- requires: [_views.sql]
SELECT model, sum(d) AS value, count(*) AS n FROM semrel_d GROUP BY ALL ORDER BY ALL
