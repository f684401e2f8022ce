-- name: semrel_distinguishability
-- description: >-
--   Distinguishability D_k(r, s) (a reconstruction of Cao et al.'s measure): for relation probe
--   r (probe), another relation s (other) and k = 1..10, over the probes (instance x prompt) of
--   r on words w with a non-empty limited set for r and a non-empty set S_s(w) (from
--   semrel/relata, limited to the models' shared vocabulary), the share whose top k answers
--   (model lists filtered and re-ranked) hold NO word of S_s(w). 1 = the agent never mixes r
--   up with s. Summarised by semrel_audc. Shared views: eval/semrel/_views.sql.
-- tasks: [relatum]
-- grain: [model, probe, other, k]
-- plot: false
-- requires: [_views.sql]
SELECT model, probe, other, k, avg(distinguished::INTEGER) AS value, count(*) AS n
FROM semrel_probe_d
GROUP BY ALL
ORDER BY ALL
