-- name: _bear_accuracy_relation_items
-- description: The items of bear_accuracy_relation, one per instance and template.
-- tasks: [choice]
-- grain: [run_id, probe, split, relation, instance_id, prompt_id]
-- requires: [_views.sql]
SELECT run_id, probe, split, relation, instance_id, prompt_id, correct AS value
FROM bear_rows
ORDER BY ALL
