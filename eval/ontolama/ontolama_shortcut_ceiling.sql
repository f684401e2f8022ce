-- name: ontolama_shortcut_ceiling
-- description: >-
--   The shortcut ceiling of each finished OntoLAMA run, on the instances it scored: the
--   accuracy of the rule of the shortcut panel (ontolama_shortcuts; fitted on train only, no
--   model) chosen on the dataset's dev split (train where there is none; rule, chosen_on);
--   best_value, best_rule: the best rule on the scored instances themselves (picked on their
--   labels) and its permutation null (null_median, null_p95: 200 seeded shuffles of the
--   labels; ../metrics/_shortcuts.sql, docs/shortcuts.md).
-- tasks: [subsumption]
-- grain: [run_id, probe, split]
-- plot: false
-- requires: [../metrics/_shortcuts.sql]
SELECT c.run_id, c.probe, c.split, c.value, c.rule, c.chosen_on, c.n, c.best_value,
       c.best_rule, z.null_median, z.null_p95
FROM sc_run_ceiling c
LEFT JOIN sc_run_null z USING (run_id, probe, split)
WHERE c.probe LIKE 'ontolama/%'
ORDER BY ALL
