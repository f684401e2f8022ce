-- name: _pararel_consistency_items
-- description: The items of pararel_consistency, one per fact (prompt_id 0), value the share of its edges that agree; relation 'all' repeats every fact (its interval is over facts).
-- tasks: [choice]
-- grain: [run_id, probe, split, relation, instance_id, prompt_id]
-- requires: [_views.sql]
SELECT run_id, probe, split, relation, instance_id, 0 AS prompt_id, consistency AS value
FROM pararel_facts WHERE pairs > 0
UNION ALL
SELECT run_id, probe, split, 'all', instance_id, 0, consistency
FROM pararel_facts WHERE pairs > 0
ORDER BY ALL
