-- name: copen_shortcut_ceiling
-- description: >-
--   The shortcut ceiling of each COPEN task and split: the best accuracy one model-free rule
--   of the shortcut panel reaches (fitted on the train split only, over the split's labelled
--   instances; ../metrics/_shortcuts.sql, docs/shortcuts.md), and that rule. No row for a
--   task without a train split.
-- tasks: [choice, binary]
-- grain: [probe, split]
-- plot: false
-- requires: [../metrics/_shortcuts.sql]
SELECT probe, split, max(value) AS value, first(rule ORDER BY value DESC, rule) AS rule,
       max(n) AS n
FROM sc_panel
WHERE probe LIKE 'copen/%' AND measure = 'accuracy'
GROUP BY ALL
ORDER BY ALL
