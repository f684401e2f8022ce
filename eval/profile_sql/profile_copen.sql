-- name: profile_copen
-- description: >-
--   Knowledge profile, COPEN (Peng et al. 2022) zero-shot: per model, task and labelled
--   instance of the latest zero-shot run (sentence in context) of the text part Table 8 uses
--   for the family the run was scored as (runs.family, never the backend's name; causal as
--   GPT-2: CSJ all, CPJ all, CiC concept; masked as BERT: CSJ query, CPJ concept, CiC all;
--   seq2seq as T5: CSJ query, CPJ concept, CiC all): 1 when
--   the gold candidate scores strictly higher than every other (the copen_accuracy rule: mean
--   log-probability per token over prompts; a tie is wrong), and the chance of a uniform pick,
--   1 / candidates (CPJ: 1/2). Instances with hidden labels are left out.
-- tasks: [choice, binary]
-- grain: [model, probe, split, instance_id]
-- plot: false
WITH part_runs AS (               -- zero-shot runs of the Table 8 part of their family
    SELECT r.run_id, r.model, r.probe,
           row_number() OVER (PARTITION BY r.model, r.probe
                              ORDER BY r.finished_at DESC NULLS LAST, r.run_id DESC) AS nth
    FROM runs r
    JOIN (VALUES ('causal', 'copen/csj', 'all'), ('causal', 'copen/cpj', 'all'),
                 ('causal', 'copen/cic', 'concept'), ('masked', 'copen/csj', 'query'),
                 ('masked', 'copen/cpj', 'concept'), ('masked', 'copen/cic', 'all'),
                 ('seq2seq', 'copen/csj', 'query'), ('seq2seq', 'copen/cpj', 'concept'),
                 ('seq2seq', 'copen/cic', 'all')) AS t8(kind, probe, part)
        ON t8.probe = r.probe
       AND t8.kind = r.family          -- the family it was scored as, not the backend's name
       AND t8.part = r.part
    WHERE r.status = 'done'
      AND coalesce(r.method, 'zero-shot')
          = 'zero-shot'
      AND coalesce(r.context, true)
),
candidate_scores AS (             -- one score per (run, instance, candidate)
    SELECT s.run_id, s.probe, s.split, s.instance_id,
           lower(coalesce(s.label, s.candidate)) AS label,
           avg(s.score / greatest(s.n_tokens, 1)) AS score
    FROM scores s JOIN part_runs p ON p.run_id = s.run_id AND p.nth = 1
    GROUP BY s.run_id, s.probe, s.split, s.instance_id, s.candidate, s.label
)
SELECT p.model, c.probe, c.split, c.instance_id,
       CASE WHEN max(c.score) FILTER (WHERE list_contains(
                     list_transform(i.gold, lambda g: lower(g)), c.label))
                 > coalesce(max(c.score) FILTER (WHERE NOT list_contains(
                     list_transform(i.gold, lambda g: lower(g)), c.label)), '-inf'::DOUBLE)
            THEN 1.0 ELSE 0.0 END AS value,
       CASE WHEN c.probe = 'copen/cpj' THEN 0.5 ELSE 1.0 / len(i.candidates) END AS chance
FROM candidate_scores c
JOIN part_runs p ON p.run_id = c.run_id AND p.nth = 1
JOIN instances i ON i.probe = c.probe AND i.split = c.split AND i.instance_id = c.instance_id
WHERE len(i.gold) > 0
GROUP BY p.model, c.probe, c.split, c.instance_id, i.candidates
ORDER BY ALL
