-- name: ontolama_kshot_protocol
-- description: >-
--   OntoLAMA's K-shot protocol (He et al. 2023, L176): per model, probe and K, the mean
--   (value) and population standard deviation (std) of the test accuracy over ALL runs, i.e.
--   every template x label-word set combination x seed (2 x 3 x 3 = 18 when complete; runs
--   says how many). Each run is scored with the class scoring it was trained with. n is the
--   number of test instances a run was evaluated on (a seeded class-balanced sample when
--   smaller than the test split).
-- tasks: [subsumption]
-- grain: [model, probe, split, k]
-- requires: [_class_scores.sql]
SELECT r.model, p.probe, p.split, r.k,
       avg(p.accuracy) AS value, stddev_pop(p.accuracy) AS std, count(*) AS runs,
       max(p.n) AS n
FROM ontolama_kshot_runs p JOIN runs r USING (run_id)
GROUP BY ALL
ORDER BY ALL
