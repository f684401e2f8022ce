-- name: ontolama_zero_shot
-- description: >-
--   OntoLAMA zero-shot summary per class scoring: the mean (value) and population standard
--   deviation (std) of the accuracy over every template x label-word set combination of a
--   zero-shot run (six: T1, T2 x L1, L2, L3), each as in ontolama_accuracy; combinations says
--   how many were averaged. scoring sum_prob is the paper's equation (the default).
-- tasks: [subsumption]
-- grain: [run_id, probe, split, scoring]
-- requires: [_class_scores.sql]
WITH combos AS (
    SELECT run_id, probe, split, prompt_id, scoring, avg(correct) AS value, count(*) AS n
    FROM ontolama_correct
    WHERE NOT is_kshot
    GROUP BY ALL
)
SELECT run_id, probe, split, scoring, avg(value) AS value, stddev_pop(value) AS std,
       count(*) AS combinations, max(n) AS n
FROM combos
GROUP BY ALL
ORDER BY ALL
