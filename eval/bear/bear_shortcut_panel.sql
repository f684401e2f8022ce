-- name: bear_shortcut_panel
-- description: >-
--   BEAR's shortcut panel: the accuracy of each model-free rule (_shortcuts.sql: the
--   relation's most frequent gold answer fitted leave-one-out, the longest answer, the
--   shortest answer, the answer sharing most word tokens with the subject) over the exported
--   instances, per relation and over all relations (relation "all").
-- tasks: [choice]
-- grain: [probe, split, relation, rule]
-- plot: false
-- requires: [_shortcuts.sql]
SELECT probe, split, relation, rule, avg(value) AS value, count(*) AS n
FROM bear_shortcut_values GROUP BY ALL
UNION ALL
SELECT probe, split, 'all', rule, avg(value), count(*)
FROM bear_shortcut_values GROUP BY probe, split, rule
ORDER BY ALL
