-- name: ontolama_shortcut_ceiling
-- description: >-
--   The shortcut ceiling of each finished OntoLAMA run: the best accuracy one rule of the
--   shortcut panel (ontolama_shortcuts; fitted on train only, no model) reaches on the
--   instances the run scored, and that rule.
-- tasks: [subsumption]
-- grain: [run_id, probe, split]
-- plot: false
-- requires: [../metrics/_shortcuts.sql]
SELECT run_id, probe, split, value, rule, n
FROM sc_run_ceiling
WHERE probe LIKE 'ontolama/%'
ORDER BY ALL
