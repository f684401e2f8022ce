-- name: shortcut_panel
-- description: >-
--   The shortcut panel: the accuracy (multiple choice: the expected accuracy, ties broken at
--   random; relatum: hits@k) of model-free rules fitted on the probe's train split only and
--   scored on each split, over the split's instances with gold (no model): the majority class,
--   the per-text label prior of each side (lookup), whether each side's text was seen in
--   train or occurs twice or more in the split or the dataset, the words the sides share,
--   head-word match,
--   lengths, the side of the complex concept; for multiple choice the candidate's answer rate
--   in train, its frequency in the dataset, its length and its overlap with the target; for
--   relatum the most frequent gold answers of train as a constant list. Rules and worked
--   examples: docs/shortcuts.md. chosen: the rule the shortcut ceiling reports, the most
--   accurate on the probe's dev split (train where there is no dev; chosen_on), on every split.
--   Probes without a train split have no rows.
-- tasks: [subsumption, binary, choice, relatum, records]
-- grain: [probe, split, rule]
-- plot: false
-- requires: [_shortcuts.sql]
SELECT p.probe, p.split, p.rule, p.measure, p.value, p.n,
       coalesce(p.rule = c.rule, false) AS chosen, c.chosen_on
FROM sc_panel p
LEFT JOIN sc_chosen_rule c USING (probe)
ORDER BY p.probe, p.split, p.rule
