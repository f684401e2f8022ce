-- name: ontolama_kshot
-- description: >-
--   OntoLAMA K-shot accuracy (python -m probes.kshot) per model, probe, K, template and
--   label-word set: the mean (value) and population standard deviation (std) over seeds of the
--   test accuracy of the best dev epoch. Each run is scored with the class scoring it was
--   trained with (runs.scoring; sum_prob, the paper's equation, when absent). K = 0 is
--   not here (see ontolama_zero_shot); K = -1 marks the fully supervised setting.
-- tasks: [subsumption]
-- grain: [model, probe, split, k, template, label_set]
-- requires: [_class_scores.sql]
SELECT r.model, p.probe, p.split, r.k, p.template, p.label_set,
       avg(p.accuracy) AS value, stddev_pop(p.accuracy) AS std, count(*) AS seeds,
       max(p.n) AS n
FROM ontolama_kshot_runs p JOIN runs r USING (run_id)
GROUP BY ALL
ORDER BY ALL
