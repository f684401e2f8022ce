-- name: generate_contains
-- description: >-
--   Generation, contains: one of the instance's accepted forms, normalised as SQuAD, occurs in
--   the normalised answer as whole words. Per instance the mean over the probe's prompts; the
--   value is the mean over instances. Only finished generate runs (status done); instances
--   without an accepted form are left out.
-- tasks: [generate]
-- grain: [run_id, probe, split]
-- requires: [_generate_matches.sql]
-- items: _generate_contains_items.sql
SELECT run_id, probe, split, avg(value) AS value, count(*) AS n
FROM (SELECT run_id, probe, split, instance_id, avg(CASE WHEN contains THEN 1.0 ELSE 0.0 END) AS value
      FROM generate_item_matches
      GROUP BY ALL)
GROUP BY ALL
ORDER BY ALL
