-- name: copen_csj_mrr_distractors
-- description: >-
--   Table 3 of the paper: the mean reciprocal rank of the distractors themselves, hard vs easy.
--   In each instance the 20 distractors (every candidate but the answer) are ranked by score
--   among themselves (rank = 1 + the number of distractors scoring strictly higher); the value
--   is the mean of 1/rank over the distractors of one kind, over all labelled instances. A
--   distractor is hard when its concept shares a superordinate with the query entity's concept
--   (fields.hard, set by the loader from the candidates' flags or the entities' concepts and the
--   taxonomy), else easy (fields.easy). A uniform ranking gives (1 + 1/2 + ... + 1/20)/20 = 18.0%
--   for either kind. Candidate scores as in copen_accuracy.
-- tasks: [choice]
-- grain: [run_id, probe, split, distractors]
-- requires: [_views.sql]
WITH candidate_scores AS (
    SELECT run_id, probe, split, instance_id, candidate, score
    FROM copen_candidate_scores WHERE probe = 'copen/csj'
),
distractors AS (                  -- every non-answer candidate with its rank among them
    SELECT c.run_id, c.probe, c.split, c.instance_id, c.candidate,
           CASE WHEN list_contains(CAST(json_extract(i.fields, '$.hard') AS VARCHAR[]),
                                   c.candidate) THEN 'hard'
                WHEN list_contains(CAST(json_extract(i.fields, '$.easy') AS VARCHAR[]),
                                   c.candidate) THEN 'easy' END AS kind,
           rank() OVER (PARTITION BY c.run_id, c.probe, c.split, c.instance_id
                        ORDER BY c.score DESC) AS rank
    FROM candidate_scores c JOIN instances i USING (probe, split, instance_id)
    WHERE len(i.gold) > 0 AND c.candidate <> i.gold[1]
)
SELECT run_id, probe, split, kind AS distractors, avg(1.0 / rank) AS value, count(*) AS n
FROM distractors
WHERE kind IS NOT NULL
GROUP BY ALL
ORDER BY ALL
