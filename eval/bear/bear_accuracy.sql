-- name: bear_accuracy
-- description: >-
--   BEAR's score as lm-pub-quiz and its leaderboard report it (`DatasetResults.get_metrics(
--   "accuracy")`): the relations' accuracies averaged with weights = their support (instances x
--   templates), which is the share of all (instance, template) rows whose best-scored answer
--   (summed log-likelihood; a tie to the earlier answer) is gold. Every relation has 3
--   templates, so this is also the mean over instances of the share of templates right.
-- tasks: [choice]
-- grain: [run_id, probe, split]
-- requires: [_views.sql]
-- items: _bear_accuracy_items.sql
SELECT run_id, probe, split, avg(correct) AS value, count(DISTINCT instance_id) AS n,
       count(*) AS rows
FROM bear_rows
GROUP BY ALL
ORDER BY ALL
