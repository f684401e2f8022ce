-- name: bear_shortcut_ceiling
-- description: >-
--   BEAR's shortcut ceiling: the accuracy of the shortcut rule chosen by 2-fold
--   cross-fitting over relations (a relation's instances are scored by the rule of the panel
--   that is best on the other fold of relations, so no label of the relation or its fold
--   picks its rule; BEAR has no train split), per relation and over all relations (relation
--   "all"), with the rule chosen most often.
-- tasks: [choice]
-- grain: [probe, split, relation]
-- plot: false
-- requires: [_shortcuts.sql]
SELECT probe, split, relation, avg(value) AS value, mode(rule) AS rule, count(*) AS n
FROM bear_shortcut_choice GROUP BY ALL
UNION ALL
SELECT probe, split, 'all', avg(value), mode(rule), count(*)
FROM bear_shortcut_choice GROUP BY probe, split
ORDER BY ALL
