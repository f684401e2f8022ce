-- name: bear_accuracy_mean
-- description: >-
--   bear_accuracy under lm-pub-quiz's reduction "mean": each statement's score is its summed
--   log-likelihood divided by the number of tokens it sums over (scores.n_tokens), then the
--   best answer per (instance, template) is picked as in bear_accuracy.
-- tasks: [choice]
-- grain: [run_id, probe, split]
-- requires: [_views.sql]
SELECT run_id, probe, split, avg(correct) AS value, count(DISTINCT instance_id) AS n
FROM bear_rows_by('mean')
GROUP BY ALL
ORDER BY ALL
