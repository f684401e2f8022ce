-- name: bear_confidence
-- description: >-
--   lm-pub-quiz's confidence metrics per relation, from the softmax over each (instance,
--   template) row's summed scores, averaged over all rows, the rows predicted right or the
--   rows predicted wrong (subset all / correct / incorrect; no row where the subset is
--   empty, as lm-pub-quiz's None): confidence_score (the top probability),
--   margin_of_confidence (top minus second probability), uncertainty_score (the entropy in
--   bits divided by log2 of the number of distinct gold answers among the relation's rows,
--   NULL when that number is 1, as lm-pub-quiz divides by zero there).
-- tasks: [choice]
-- grain: [run_id, probe, split, relation, measure, subset]
-- plot: false
-- requires: [_views.sql]
WITH r AS (
  SELECT *, count(DISTINCT gold_idx) OVER (PARTITION BY run_id, probe, split, relation)
              AS n_gold
  FROM bear_rows),
m AS (
  SELECT run_id, probe, split, relation, correct, p_top AS confidence_score,
         p_top - p_second AS margin_of_confidence,
         CASE WHEN n_gold > 1 THEN entropy_bits / log2(n_gold) END AS uncertainty_score
  FROM r),
long AS (
  SELECT run_id, probe, split, relation, correct, 'confidence_score' AS measure,
         confidence_score AS v FROM m
  UNION ALL SELECT run_id, probe, split, relation, correct, 'margin_of_confidence',
                   margin_of_confidence FROM m
  UNION ALL SELECT run_id, probe, split, relation, correct, 'uncertainty_score',
                   uncertainty_score FROM m),
subsets AS (
  SELECT *, 'all' AS subset FROM long
  UNION ALL SELECT *, CASE WHEN correct = 1 THEN 'correct' ELSE 'incorrect' END FROM long)
SELECT run_id, probe, split, relation, measure, subset, avg(v) AS value, count(*) AS n
FROM subsets
GROUP BY run_id, probe, split, relation, measure, subset
ORDER BY ALL
