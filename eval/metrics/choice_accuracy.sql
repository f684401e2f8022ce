-- name: choice_accuracy
-- description: >-
--   Multiple choice accuracy. A candidate's score is the MEAN of its scores
--   (log-probability or pseudo-log-likelihood) over the probe's prompts; an instance is right
--   when its best gold candidate scores strictly higher than every other candidate (a tie
--   counts as wrong). Instances without gold are left out; a gold answer that was not scored
--   counts as wrong. Only finished runs (status done).
-- tasks: [choice]
-- grain: [run_id, probe, split]
-- items: _choice_accuracy_items.sql
WITH candidate_scores AS (        -- one score per (instance, candidate): the mean over prompts
    SELECT s.run_id, s.probe, s.split, s.instance_id, s.candidate, avg(s.score) AS score
    FROM scores s JOIN runs r USING (run_id)
    WHERE r.task = 'choice' AND r.status = 'done'
    GROUP BY ALL
),
gold_best AS (                    -- the best-scoring gold candidate of each instance
    SELECT c.run_id, c.probe, c.split, c.instance_id,
           max(c.score) FILTER (WHERE list_contains(i.gold, c.candidate)) AS gold_score
    FROM candidate_scores c JOIN instances i USING (probe, split, instance_id)
    WHERE len(i.gold) > 0
    GROUP BY ALL
),
gold_rank AS (                    -- 1 + the number of wrong candidates scoring at least as high
    SELECT g.run_id, g.probe, g.split, g.instance_id,
           CASE WHEN g.gold_score IS NOT NULL THEN 1 + count(*) FILTER (
               WHERE NOT list_contains(i.gold, c.candidate) AND c.score >= g.gold_score) END
           AS rank
    FROM gold_best g
    JOIN candidate_scores c USING (run_id, probe, split, instance_id)
    JOIN instances i USING (probe, split, instance_id)
    GROUP BY g.run_id, g.probe, g.split, g.instance_id, g.gold_score
)
SELECT run_id, probe, split,
       avg(CASE WHEN rank = 1 THEN 1.0 ELSE 0.0 END) AS value,
       count(*) AS n
FROM gold_rank
GROUP BY ALL
ORDER BY ALL
