-- name: chance_accuracy
-- description: >-
--   The chance baseline beside choice_accuracy and binary_accuracy, over the instances each
--   run scored that have gold. Multiple choice: the expected accuracy of a uniformly random
--   pick (gold candidates scored / candidates scored, averaged over instances; a gold answer
--   that was not scored adds 0, as it counts as wrong there). Binary: the majority baseline,
--   the share of the most frequent gold class (compared case-insensitively).
-- tasks: [choice, binary]
-- grain: [run_id, probe, split]
-- plot: false
WITH scored AS (                  -- one row per scored instance with gold
    SELECT s.run_id, s.probe, s.split, s.instance_id, r.task, lower(i.gold[1]) AS gold_class,
           count(DISTINCT s.candidate) AS n_candidates,
           count(DISTINCT s.candidate) FILTER (WHERE list_contains(i.gold, s.candidate))
               AS n_gold
    FROM scores s JOIN runs r USING (run_id)
    JOIN instances i
        ON i.probe = s.probe AND i.split = s.split AND i.instance_id = s.instance_id
    WHERE r.task IN ('choice', 'binary') AND r.status = 'done' AND len(i.gold) > 0
    GROUP BY ALL
),
classes AS (                      -- binary: instances per gold class
    SELECT run_id, probe, split, gold_class, count(*) AS k
    FROM scored WHERE task = 'binary'
    GROUP BY ALL
)
SELECT run_id, probe, split, avg(n_gold / n_candidates) AS value, count(*) AS n
FROM scored WHERE task = 'choice'
GROUP BY ALL
UNION ALL
SELECT run_id, probe, split, max(k) / sum(k) AS value, sum(k)::BIGINT AS n
FROM classes
GROUP BY ALL
ORDER BY ALL
