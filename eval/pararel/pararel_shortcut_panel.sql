-- name: pararel_shortcut_panel
-- description: >-
--   ParaRel's shortcut panel (no model): the accuracy of each model-free rule of the generic
--   panel (eval/metrics/_shortcuts.sql, docs/shortcuts.md: the candidate's answer rate in
--   train, its frequency, length and characters, the words it shares with the subject, head-word
--   match, its place in the relation's object list) fitted on the train part of a seeded split
--   of the facts by subject (_shortcut_split.sql: MD5(subject|42), train 10/16, dev 3/16, test
--   3/16; no subject in two parts) and scored on each part; `value` pools the part's n facts,
--   `relation_mean` averages its relations (as the paper averages). chosen: the rule the
--   ceiling reports, the most accurate on dev (chosen_on). A probe restricted to one relation
--   has one candidate list, so the panel reads it as a label (or relatum) probe and its rules
--   are the majority class and the subject's text, length and frequency.
-- tasks: [choice]
-- grain: [probe, split, rule]
-- plot: false
-- requires: [_shortcut_split.sql, ../metrics/_shortcuts.sql]
WITH per_rel AS (
  SELECT c.probe, c.split, c.rule, i.fields->>'relation' AS relation, avg(c.correct) AS value
  FROM sc_correct c JOIN sc_instances i USING (probe, split, instance_id)
  WHERE c.measure = 'accuracy'
  GROUP BY ALL),
rel AS (
  SELECT probe, split, rule, avg(value) AS relation_mean, count(*) AS relations
  FROM per_rel GROUP BY ALL)
SELECT p.probe, p.split, p.rule, p.value, p.n, r.relation_mean, r.relations,
       coalesce(p.rule = c.rule, false) AS chosen, c.chosen_on
FROM sc_panel p
JOIN rel r USING (probe, split, rule)
LEFT JOIN sc_chosen_rule c USING (probe)
WHERE p.measure = 'accuracy'
ORDER BY p.probe, p.split, p.rule
