-- name: generate_exact_match
-- description: >-
--   Generation, exact match: the answer, normalised as SQuAD (lower case, ASCII punctuation and
--   the articles a, an, the removed, white space collapsed), equals one of the instance's
--   accepted forms normalised the same way. Per instance the mean over the probe's prompts; the
--   value is the mean over instances. Only finished generate runs (status done); instances
--   without an accepted form are left out.
-- tasks: [generate]
-- grain: [run_id, probe, split]
-- requires: [_generate_matches.sql]
-- items: _generate_exact_match_items.sql
SELECT run_id, probe, split, avg(value) AS value, count(*) AS n
FROM (SELECT run_id, probe, split, instance_id, avg(CASE WHEN exact THEN 1.0 ELSE 0.0 END) AS value
      FROM generate_item_matches
      GROUP BY ALL)
GROUP BY ALL
ORDER BY ALL
