-- name: ontolama_shortcuts
-- description: >-
--   The shortcut panel of each OntoLAMA dataset and split (no model): the accuracy of each
--   model-free rule fitted on the dataset's train split only (eval/metrics/_shortcuts.sql,
--   docs/shortcuts.md): majority class, the per-concept label prior of the premise and of
--   the hypothesis (lookup), "seen in train" and "occurs twice or more in the split" (and in
--   the dataset) of each
--   side (for Complex SI also of the complex and the named concept), shared words, head-word
--   match, lengths and, for Complex SI, the side of the complex concept. chosen: the rule the
--   shortcut ceiling reports, the most accurate on the dataset's dev split (train where there
--   is no dev; chosen_on); its value on a split is that split's shortcut ceiling.
-- tasks: [subsumption]
-- grain: [probe, split, rule]
-- requires: [../metrics/_shortcuts.sql]
SELECT p.probe, p.split, p.rule, p.measure, p.value, p.n,
       coalesce(p.rule = c.rule, false) AS chosen, c.chosen_on
FROM sc_panel p
LEFT JOIN sc_chosen_rule c USING (probe)
WHERE p.probe LIKE 'ontolama/%'
ORDER BY ALL
