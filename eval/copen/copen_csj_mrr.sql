-- name: copen_csj_mrr
-- description: >-
--   CSJ mean reciprocal rank of the answer among the 21 candidates. Candidate scores as in
--   copen_accuracy (per-token mean, averaged over prompts); the answer's rank is its place in
--   the authors' stable sort (computeMR, code/probing/metric.py): 1 + the number of distractors
--   scoring higher + the number scoring the same that come before it in the file's order.
--   Hidden labels are left out.
-- tasks: [choice]
-- grain: [run_id, probe, split]
-- requires: [_views.sql]
WITH candidate_scores AS (
    SELECT run_id, probe, split, instance_id, candidate, score
    FROM copen_candidate_scores WHERE probe = 'copen/csj'
),
answer AS (
    SELECT c.run_id, c.probe, c.split, c.instance_id, c.score AS answer_score
    FROM candidate_scores c JOIN instances i USING (probe, split, instance_id)
    WHERE len(i.gold) > 0 AND c.candidate = i.gold[1]
),
ranked AS (
    SELECT a.run_id, a.probe, a.split, a.instance_id,
           1 + count(*) FILTER (WHERE c.candidate <> i.gold[1] AND (
                   c.score > a.answer_score OR (c.score = a.answer_score
                   AND list_position(i.candidates, c.candidate)
                       < list_position(i.candidates, i.gold[1])))) AS rank
    FROM answer a
    JOIN candidate_scores c USING (run_id, probe, split, instance_id)
    JOIN instances i USING (probe, split, instance_id)
    GROUP BY ALL
)
SELECT run_id, probe, split, avg(1.0 / rank) AS value, count(*) AS n
FROM ranked
GROUP BY ALL
ORDER BY ALL
