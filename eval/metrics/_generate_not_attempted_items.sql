-- name: generate_not_attempted_items
-- description: >-
--   The items of generate_not_attempted: per instance and prompt, the answer's value under that
--   prompt (1 or 0; the F1 for generate_f1).
-- tasks: [generate]
-- grain: [run_id, probe, split, instance_id, prompt_id]
-- requires: [_generate_matches.sql]
-- plot: false
SELECT run_id, probe, split, instance_id, prompt_id, CASE WHEN not_attempted THEN 1.0 ELSE 0.0 END AS value
FROM generate_item_matches
ORDER BY ALL
