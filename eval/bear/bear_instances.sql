-- name: bear_instances
-- description: >-
--   BEAR per instance (the rows the BEAR report builds its intervals and per-domain tables
--   from): the share of the instance's templates right, chance (1 / answer-space size), the
--   shortcut ceiling's item (the rule chosen on the other fold of relations, right or not), the
--   relation and its domains.
-- tasks: [choice]
-- grain: [run_id, probe, split, instance_id]
-- plot: false
-- requires: [_views.sql, _shortcuts.sql]
SELECT v.run_id, v.probe, v.split, v.instance_id, v.relation, v.value, v.chance, v.domains,
       c.value AS ceiling, c.rule AS ceiling_rule
FROM bear_instance_values v
LEFT JOIN bear_shortcut_choice c USING (probe, split, instance_id)
ORDER BY ALL
