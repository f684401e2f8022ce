-- name: copen_shortcut_ceiling
-- description: >-
--   The shortcut ceiling of each COPEN task and split: the accuracy of the model-free rule of
--   the shortcut panel chosen on the task's dev split (train where there is no dev; rule,
--   chosen_on), every rule fitted on the train split only, over the split's labelled
--   instances (../metrics/_shortcuts.sql, docs/shortcuts.md); best_value, best_rule: the best
--   rule on the split itself, picked on its labels. No row for a task without a train split.
-- tasks: [choice, binary]
-- grain: [probe, split]
-- plot: false
-- requires: [../metrics/_shortcuts.sql]
SELECT p.probe, p.split, max(p.value) FILTER (WHERE p.rule = c.rule) AS value,
       any_value(c.rule) AS rule, any_value(c.chosen_on) AS chosen_on, max(p.n) AS n,
       max(p.value) AS best_value, first(p.rule ORDER BY p.value DESC, p.rule) AS best_rule
FROM sc_panel p JOIN sc_chosen_rule c USING (probe)
WHERE p.probe LIKE 'copen/%' AND p.measure = 'accuracy'
GROUP BY ALL
ORDER BY ALL
