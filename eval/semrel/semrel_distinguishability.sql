-- name: semrel_distinguishability
-- description: >-
--   Distinguishability D(r, s) (Cao et al. eqs. 24-26) for the 30 ordered pairs: delta(r, s) =
--   the mean over r's probes of the mean normalised rank rho of w's s-relata in L_k(w, p),
--   k = |Y^r(w)| (absent relata: semrel_absent); D = max(delta(r, s) - delta(r, r), 0).
--   probe = r, other = s; delta and delta_rr are given too.
-- tasks: [relatum]
-- grain: [model, probe, other]
-- plot: false
-- requires: [_views.sql]
SELECT model, 'semrel/' || lower(relation) AS probe, other, d AS value, n, delta, delta_rr
FROM semrel_d
ORDER BY ALL
