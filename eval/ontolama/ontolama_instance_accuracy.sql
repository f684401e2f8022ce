-- name: ontolama_instance_accuracy
-- description: >-
--   Per zero-shot run and instance, the share of the run's prompts (templates x label-word
--   sets) that classify the instance right under the paper's class scoring (the sum of the
--   label words' probabilities; ontolama_correct of _class_scores.sql): the per-instance
--   values on which the report compares two models on the same instances (a paired test).
-- tasks: [subsumption]
-- grain: [run_id, probe, split, instance_id]
-- requires: [_class_scores.sql]
-- plot: false
SELECT run_id, probe, split, instance_id, avg(correct) AS value, count(*) AS n
FROM ontolama_correct
WHERE scoring = 'sum_prob' AND NOT is_kshot
GROUP BY ALL
ORDER BY ALL
