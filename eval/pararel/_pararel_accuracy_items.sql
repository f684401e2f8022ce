-- name: _pararel_accuracy_items
-- description: The items of pararel_accuracy, one per fact under pattern 0 (1 = its answer is gold); relation 'all' repeats every fact.
-- tasks: [choice]
-- grain: [run_id, probe, split, relation, instance_id, prompt_id]
-- requires: [_views.sql]
SELECT run_id, probe, split, relation, instance_id, prompt_id, correct AS value
FROM pararel_answers WHERE prompt_id = 0
UNION ALL
SELECT run_id, probe, split, 'all', instance_id, prompt_id, correct
FROM pararel_answers WHERE prompt_id = 0
ORDER BY ALL
