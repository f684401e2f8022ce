-- name: copen_accuracy
-- description: >-
--   COPEN accuracy (CSJ, CPJ, CiC). As in the COPEN probing code, a candidate's score is its
--   log-probability (pseudo-log-likelihood for masked LMs) divided by its token count, averaged
--   over the run's prompts (linear probing and fine-tuning write logits with a token count of
--   1). An instance is right when its gold candidate (CPJ: the best label of the gold class)
--   scores strictly higher than every other candidate; a tie counts as wrong. Instances with
--   hidden labels (-1) are left out. Only finished runs of the copen/* probes.
-- tasks: [choice, binary]
-- grain: [run_id, probe, split]
-- requires: [_views.sql]
WITH per_instance AS (  -- the best gold and the best other score of each instance
    SELECT c.run_id, c.probe, c.split, c.instance_id,
           max(c.score) FILTER (WHERE list_contains(list_transform(i.gold, lambda g: lower(g)),
                                                    c.label)) AS gold_best,
           max(c.score) FILTER (WHERE NOT list_contains(list_transform(i.gold, lambda g: lower(g)),
                                                        c.label)) AS other_best
    FROM copen_candidate_scores c JOIN instances i USING (probe, split, instance_id)
    WHERE len(i.gold) > 0
    GROUP BY ALL
)
SELECT run_id, probe, split,
       avg(CASE WHEN gold_best > coalesce(other_best, '-inf'::DOUBLE) THEN 1.0 ELSE 0.0 END)
           AS value,
       count(*) AS n
FROM per_instance
GROUP BY ALL
ORDER BY ALL
