-- name: ontolama_shortcuts
-- description: >-
--   The shortcut panel of each OntoLAMA dataset and split (no model): the accuracy of each
--   model-free rule fitted on the dataset's train split only (eval/metrics/_shortcuts.sql,
--   docs/shortcuts.md): majority class, the per-concept label prior of the premise and of
--   the hypothesis (lookup), "seen in train" and "occurs twice or more in the split" (and in
--   the dataset) of each
--   side (for Complex SI also of the complex and the named concept), shared words, head-word
--   match, lengths and, for Complex SI, the side of the complex concept. The best rule of a
--   split is its shortcut ceiling.
-- tasks: [subsumption]
-- grain: [probe, split, rule]
-- requires: [../metrics/_shortcuts.sql]
SELECT probe, split, rule, measure, value, n
FROM sc_panel
WHERE probe LIKE 'ontolama/%'
ORDER BY ALL
