-- Shared temporary view of the COPEN metrics (not a metric: the metric files name it in their
-- `requires` header; in the DuckDB CLI `.read eval/copen/_views.sql` first).
-- copen_candidate_scores: one score per (finished COPEN run, instance, candidate), the mean over
-- prompts of the per-token score (score / n_tokens; a trained run stores n_tokens = 1), with
-- the class the candidate stands for lower-cased (label: the candidate itself for CSJ and CiC,
-- true / false for CPJ).
CREATE OR REPLACE TEMP VIEW copen_candidate_scores AS
SELECT s.run_id, s.probe, s.split, s.instance_id, s.candidate,
       lower(coalesce(s.label, s.candidate)) AS label,
       avg(s.score / greatest(s.n_tokens, 1)) AS score
FROM scores s JOIN runs r USING (run_id)
WHERE r.probe LIKE 'copen/%' AND r.status = 'done'
GROUP BY s.run_id, s.probe, s.split, s.instance_id, s.candidate, s.label;
