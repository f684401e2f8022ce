-- name: semrel_response_entropy
-- description: >-
--   Human response entropy R (Cao et al. eq. 19) per relation: value = the mean R over the
--   probes with human answers (pooled normalised frequency of the answer tokens; R = 0 when one
--   distinct answer); r0 = probes with R = 0 (Table 3), r1 = probes with R = 1 (removed from
--   prototypicality), mean_r_nonzero = the mean R without the zeros (Fig. 2), length = the
--   mean number of distinct answers (Table 3), tokens = answer tokens. Over the answers of
--   semrel_entropy_population (default 'file': every loaded answer, no vocabulary limit).
-- tasks: [relatum]
-- grain: [model, probe]
-- plot: false
-- requires: [_views.sql]
SELECT 'human' AS model, probe, avg(r) AS value, count(*) AS n,
       count(*) FILTER (WHERE r = 0) AS r0,
       count(*) FILTER (WHERE r > 1 - 1e-9) AS r1,
       avg(r) FILTER (WHERE r > 0) AS mean_r_nonzero,
       stddev_samp(r) FILTER (WHERE r > 0) AS sd_r_nonzero,
       avg(n_distinct) AS length, sum(tokens) AS tokens
FROM semrel_probe_r GROUP BY ALL
ORDER BY ALL
