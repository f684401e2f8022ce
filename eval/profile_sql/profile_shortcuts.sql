-- name: profile_shortcuts
-- description: >-
--   Knowledge profile, the shortcut panel per item: for every instance some finished run
--   scored, each model-free rule's correctness (1 / 0; multiple choice: the expected share,
--   ties at random) fitted on the probe's train split only (../metrics/_shortcuts.sql,
--   docs/shortcuts.md), of the rule chosen on the probe's dev split (train where there is no
--   dev; sc_chosen_rule): the profile takes its mean over a line's items, the shortcut ceiling
--   beside chance.
-- tasks: [subsumption, choice, binary]
-- grain: [probe, split, instance_id, rule]
-- requires: [../metrics/_shortcuts.sql]
-- plot: false
WITH scored AS (
    SELECT DISTINCT s.probe, s.split, s.instance_id
    FROM scores s JOIN runs r USING (run_id)
    WHERE r.status = 'done'
)
SELECT c.probe, c.split, c.instance_id, c.rule, c.correct AS value
FROM sc_correct c SEMI JOIN scored USING (probe, split, instance_id)
SEMI JOIN sc_chosen_rule USING (probe, rule)
WHERE c.measure = 'accuracy'
ORDER BY ALL
