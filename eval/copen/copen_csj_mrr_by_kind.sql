-- name: copen_csj_mrr_by_kind
-- description: >-
--   CSJ MRR by instance kind, for released files whose item ids start with 'hard' or 'easy'
--   (the COPEN probing code reports the two kinds apart). Scores and ranks as in copen_csj_mrr;
--   instances without a kind and hidden labels are left out.
-- tasks: [choice]
-- grain: [run_id, probe, split, kind]
WITH candidate_scores AS (
    SELECT s.run_id, s.probe, s.split, s.instance_id, s.candidate,
           avg(s.score / greatest(s.n_tokens, 1)) AS score
    FROM scores s JOIN runs r USING (run_id)
    WHERE r.probe = 'copen/csj' AND r.status = 'done'
    GROUP BY ALL
),
ranked AS (
    SELECT c.run_id, c.probe, c.split, c.instance_id,
           json_extract_string(i.fields, '$.kind') AS kind,
           1 + count(*) FILTER (WHERE c.candidate <> i.gold[1] AND c.score >= a.score) AS rank
    FROM instances i
    JOIN candidate_scores a ON a.probe = i.probe AND a.split = i.split
         AND a.instance_id = i.instance_id AND a.candidate = i.gold[1]
    JOIN candidate_scores c ON c.run_id = a.run_id AND c.probe = i.probe
         AND c.split = i.split AND c.instance_id = i.instance_id
    WHERE i.probe = 'copen/csj' AND len(i.gold) > 0
      AND json_extract_string(i.fields, '$.kind') IS NOT NULL
    GROUP BY ALL
)
SELECT run_id, probe, split, kind, avg(1.0 / rank) AS value, count(*) AS n
FROM ranked
GROUP BY ALL
ORDER BY ALL
