-- name: choice_accuracy
-- description: >-
--   Multiple choice accuracy. A candidate's score is the MEAN of its scores
--   (log-probability or pseudo-log-likelihood) over the probe's prompts; an instance is right
--   when its best gold candidate scores strictly higher than every other candidate (a tie
--   counts as wrong). Instances without gold are left out; a gold answer that was not scored
--   counts as wrong. Only finished runs (status done).
-- tasks: [choice]
-- grain: [run_id, probe, split]
-- requires: [_choice_ranks.sql]
-- items: _choice_accuracy_items.sql
SELECT run_id, probe, split,
       avg(CASE WHEN rank = 1 THEN 1.0 ELSE 0.0 END) AS value,
       count(*) AS n
FROM choice_item_ranks
WHERE prompt_id = -1              -- the rank under the mean of the scores over the prompts
GROUP BY ALL
ORDER BY ALL
