-- name: choice_mrr
-- description: >-
--   Mean reciprocal rank of the gold answer among the candidates (COPEN's MRR). A candidate's
--   score is the MEAN of its scores over the probe's prompts; the gold rank is 1 + the number
--   of non-gold candidates scoring at least as high as the best gold candidate (ties count
--   against the gold). Instances without gold are left out; an unscored gold answer gives 0.
--   Only finished runs (status done).
-- tasks: [choice]
-- grain: [run_id, probe, split]
-- items: _choice_mrr_items.sql
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
       avg(coalesce(1.0 / rank, 0.0)) AS value,
       count(*) AS n
FROM gold_rank
GROUP BY ALL
ORDER BY ALL
