-- name: copen_accuracy
-- description: >-
--   COPEN accuracy (CSJ, CPJ, CiC). As in the COPEN probing code, a candidate's score is its
--   log-probability (pseudo-log-likelihood for masked LMs) divided by its token count, averaged
--   over the run's prompts (linear probing and fine-tuning write logits with a token count of
--   1). The prediction is the best-scoring candidate, a tie broken as the authors' code breaks
--   it (copen_predictions: CSJ and CiC the earliest candidate in the file's order, CPJ false);
--   an instance is right when the prediction stands for its gold class. Instances with hidden
--   labels (-1) are left out. Only finished runs of the copen/* probes.
-- tasks: [choice, binary]
-- grain: [run_id, probe, split]
-- requires: [_views.sql]
SELECT p.run_id, p.probe, p.split,
       avg(CASE WHEN list_contains(list_transform(i.gold, lambda g: lower(g)), p.predicted_label)
                THEN 1.0 ELSE 0.0 END) AS value,
       count(*) AS n
FROM copen_predictions p JOIN instances i USING (probe, split, instance_id)
WHERE len(i.gold) > 0
GROUP BY ALL
ORDER BY ALL
