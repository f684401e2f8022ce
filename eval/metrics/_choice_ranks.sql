-- The gold rank of every scored choice instance, once per prompt (prompt_id as stored) and
-- once under the mean of its scores over the prompts (prompt_id = -1: what choice_accuracy and
-- choice_mrr count). The rank is 1 + the number of non-gold candidates scoring at least as
-- high as the best gold candidate (ties count against the gold); NULL when no gold candidate
-- was scored. Instances without gold are left out; only finished runs (status done).
-- Support file of choice_accuracy and the items files of choice_accuracy and choice_mrr, so
-- the metric and the items rank the same way.
CREATE OR REPLACE TEMP VIEW choice_item_ranks AS
WITH per_prompt AS (
    SELECT s.run_id, s.probe, s.split, s.instance_id, s.prompt_id, s.candidate, s.score
    FROM scores s JOIN runs r USING (run_id)
    WHERE r.task = 'choice' AND r.status = 'done'
),
candidate_scores AS (             -- each prompt's scores, and their mean as prompt -1
    SELECT * FROM per_prompt
    UNION ALL
    SELECT run_id, probe, split, instance_id, -1 AS prompt_id, candidate, avg(score) AS score
    FROM per_prompt
    GROUP BY run_id, probe, split, instance_id, candidate
),
gold_best AS (
    SELECT c.run_id, c.probe, c.split, c.instance_id, c.prompt_id,
           max(c.score) FILTER (WHERE list_contains(i.gold, c.candidate)) AS gold_score
    FROM candidate_scores c JOIN instances i USING (probe, split, instance_id)
    WHERE len(i.gold) > 0
    GROUP BY ALL
)
SELECT g.run_id, g.probe, g.split, g.instance_id, g.prompt_id,
       CASE WHEN g.gold_score IS NOT NULL THEN 1 + count(*) FILTER (
           WHERE NOT list_contains(i.gold, c.candidate) AND c.score >= g.gold_score) END
       AS rank
FROM gold_best g
JOIN candidate_scores c USING (run_id, probe, split, instance_id, prompt_id)
JOIN instances i USING (probe, split, instance_id)
GROUP BY g.run_id, g.probe, g.split, g.instance_id, g.prompt_id, g.gold_score;
