-- name: shortcut_ceiling
-- description: >-
--   The shortcut ceiling beside each run's accuracy and chance: the best accuracy that one
--   rule of the shortcut panel (shortcut_panel, docs/shortcuts.md; fitted on train only, no
--   model) reaches on the instances the run scored, and that rule (rule). Only probes with a
--   train split; only finished runs.
-- tasks: [subsumption, binary, choice, relatum]
-- grain: [run_id, probe, split]
-- plot: false
-- requires: [_shortcuts.sql]
SELECT run_id, probe, split, value, rule, n
FROM sc_run_ceiling
ORDER BY ALL
