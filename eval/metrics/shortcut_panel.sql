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
--   examples: docs/shortcuts.md. Probes without a train split have no rows.
-- tasks: [subsumption, binary, choice, relatum, records]
-- grain: [probe, split, rule]
-- plot: false
-- requires: [_shortcuts.sql]
SELECT probe, split, rule, measure, value, n
FROM sc_panel
ORDER BY probe, split, rule
