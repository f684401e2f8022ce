-- name: generate_f1
-- description: >-
--   Generation, token F1: SQuAD's F1 between the words of the normalised answer and of the
--   accepted form that gives the highest F1. Per instance the mean over the probe's prompts;
--   the value is the mean over instances. Only finished generate runs (status done); instances
--   without an accepted form are left out.
-- tasks: [generate]
-- grain: [run_id, probe, split]
-- requires: [_generate_matches.sql]
-- items: _generate_f1_items.sql
SELECT run_id, probe, split, avg(value) AS value, count(*) AS n
FROM (SELECT run_id, probe, split, instance_id, avg(f1) AS value
      FROM generate_item_matches
      GROUP BY ALL)
GROUP BY ALL
ORDER BY ALL
