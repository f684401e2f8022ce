-- name: _bear_accuracy_items
-- description: The items of bear_accuracy, one per instance and template (1 = the template's best answer is gold).
-- tasks: [choice]
-- grain: [run_id, probe, split, instance_id, prompt_id]
-- requires: [_views.sql]
SELECT run_id, probe, split, instance_id, prompt_id, correct AS value
FROM bear_rows
ORDER BY ALL
