-- name: generate_not_attempted
-- description: >-
--   Generation, not attempted (SimpleQA's outcome, by rule): the answer holds no accepted form
--   and is empty or says it does not know or will not answer (eval.answers.REFUSALS); lower is
--   better. Per instance the mean over the probe's prompts; the value is the mean over
--   instances. Only finished generate runs (status done); instances without an accepted form
--   are left out.
-- tasks: [generate]
-- grain: [run_id, probe, split]
-- requires: [_generate_matches.sql]
-- items: _generate_not_attempted_items.sql
SELECT run_id, probe, split, avg(value) AS value, count(*) AS n
FROM (SELECT run_id, probe, split, instance_id, avg(CASE WHEN not_attempted THEN 1.0 ELSE 0.0 END) AS value
      FROM generate_item_matches
      GROUP BY ALL)
GROUP BY ALL
ORDER BY ALL
