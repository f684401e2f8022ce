-- name: bear_brier_score
-- description: >-
--   lm-pub-quiz's brier_score per relation: for each answer of the answer space the mean
--   over the relation's (instance, template) rows of (softmax probability - [answer is
--   gold])^2, averaged over the answers (sklearn's brier_score_loss per answer column, then
--   the mean); lower is better.
-- tasks: [choice]
-- grain: [run_id, probe, split, relation]
-- plot: false
-- requires: [_views.sql]
SELECT run_id, probe, split, relation, avg(brier_sum / n_answers) AS value,
       count(*) AS n
FROM bear_rows
GROUP BY ALL
ORDER BY ALL
