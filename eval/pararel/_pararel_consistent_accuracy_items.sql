-- name: _pararel_consistent_accuracy_items
-- description: The items of pararel_consistent_accuracy, one per fact (prompt_id 0; 1 = right under every pattern); relation 'all' repeats every fact.
-- tasks: [choice]
-- grain: [run_id, probe, split, relation, instance_id, prompt_id]
-- requires: [_views.sql]
SELECT run_id, probe, split, relation, instance_id, 0 AS prompt_id, consistent_correct AS value
FROM pararel_facts
UNION ALL
SELECT run_id, probe, split, 'all', instance_id, 0, consistent_correct
FROM pararel_facts
ORDER BY ALL
