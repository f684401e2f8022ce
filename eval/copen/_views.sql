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
-- copen_predictions: the option each finished COPEN run predicts for each instance (labelled or
-- not), with the class it stands for: the best candidate score, a tie broken as the authors'
-- code breaks it (THU-KEG/COPEN code/probing/metric.py): CSJ and CiC the earliest candidate in
-- the released file's order (CSJ: the stable sort of computeTopk; CiC: `prob > flag` over the
-- concept chains in order; instances.candidates keeps that order), CPJ `false`
-- (`int(positive_pred > negative_pred)`).
CREATE OR REPLACE TEMP VIEW copen_predictions AS
SELECT c.run_id, c.probe, c.split, c.instance_id,
       first(c.candidate ORDER BY c.score DESC,
             CASE WHEN c.probe = 'copen/cpj' THEN CASE WHEN c.label = 'false' THEN 0 ELSE 1 END
                  ELSE coalesce(list_position(i.candidates, c.candidate), 1000000) END,
             c.candidate) AS prediction,
       first(c.label ORDER BY c.score DESC,
             CASE WHEN c.probe = 'copen/cpj' THEN CASE WHEN c.label = 'false' THEN 0 ELSE 1 END
                  ELSE coalesce(list_position(i.candidates, c.candidate), 1000000) END,
             c.candidate) AS predicted_label
FROM copen_candidate_scores c JOIN instances i USING (probe, split, instance_id)
GROUP BY c.run_id, c.probe, c.split, c.instance_id;
