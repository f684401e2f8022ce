-- name: copen_csj_mrr_distractors
-- description: >-
--   CSJ MRR against hard vs easy distractors: the answer's reciprocal rank among the answer and
--   only the hard distractors (entities of concepts that share a superordinate with the query's
--   concept), or only the easy ones. Scores as in copen_csj_mrr. Needs distractor kinds
--   (instances built by probes.copen.construct, or released candidates with 'hard'/'type');
--   instances without them and hidden labels are left out.
-- tasks: [choice]
-- grain: [run_id, probe, split, distractors]
WITH candidate_scores AS (
    SELECT s.run_id, s.probe, s.split, s.instance_id, s.candidate,
           avg(s.score / greatest(s.n_tokens, 1)) AS score
    FROM scores s JOIN runs r USING (run_id)
    WHERE r.probe = 'copen/csj' AND r.status = 'done'
    GROUP BY ALL
),
kinds AS (                        -- (instance, distractor kind, the distractors of that kind)
    SELECT probe, split, instance_id, gold[1] AS answer, k.kind,
           CAST(json_extract(fields, '$.' || k.kind) AS VARCHAR[]) AS distractors
    FROM instances, (VALUES ('hard'), ('easy')) AS k(kind)
    WHERE probe = 'copen/csj' AND len(gold) > 0
),
ranked AS (
    SELECT c.run_id, c.probe, c.split, c.instance_id, k.kind AS distractors,
           1 + count(*) FILTER (WHERE list_contains(k.distractors, c.candidate)
                                  AND c.score >= a.score) AS rank
    FROM kinds k
    JOIN candidate_scores a ON a.probe = k.probe AND a.split = k.split
         AND a.instance_id = k.instance_id AND a.candidate = k.answer
    JOIN candidate_scores c ON c.run_id = a.run_id AND c.probe = k.probe
         AND c.split = k.split AND c.instance_id = k.instance_id
    WHERE len(k.distractors) > 0
    GROUP BY ALL
)
SELECT run_id, probe, split, distractors, avg(1.0 / rank) AS value, count(*) AS n
FROM ranked
GROUP BY ALL
ORDER BY ALL
