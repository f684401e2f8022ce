-- name: shortcut_ceiling
-- description: >-
--   The shortcut ceiling beside each run's accuracy and chance, on the instances the run
--   scored: value is the accuracy of the rule of the shortcut panel (shortcut_panel,
--   docs/shortcuts.md; every rule fitted on train only, no model) that was chosen on the
--   probe's dev split, or on train where there is no dev (rule, chosen_on): no label of the
--   scored split picks it. best_value and best_rule: the best rule on the scored instances
--   themselves, picked on their labels (an upper bound, biased upward), with its permutation
--   null for label probes (null_median, null_p95: the best rule's accuracy against the run's
--   labels shuffled 200 times, seeded). Only probes with a train split; only finished runs.
-- tasks: [subsumption, binary, choice, relatum]
-- grain: [run_id, probe, split]
-- plot: false
-- requires: [_shortcuts.sql]
SELECT c.run_id, c.probe, c.split, c.value, c.rule, c.chosen_on, c.n, c.best_value,
       c.best_rule, z.null_median, z.null_p95
FROM sc_run_ceiling c
LEFT JOIN sc_run_null z USING (run_id, probe, split)
ORDER BY ALL
