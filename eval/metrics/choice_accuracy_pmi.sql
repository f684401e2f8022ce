-- name: choice_accuracy_pmi
-- description: >-
--   Calibrated multiple choice accuracy (PMI): each candidate's score minus its
--   log-probability after the probe's neutral context (params pmi_context; "" =
--   unconditional, lm-evaluation-harness's acc_mutual_info) before the mean over prompts;
--   otherwise as choice_accuracy. Only runs of probes with pmi_context.
--   Only finished runs (status done); see _normalised.sql.
-- tasks: [choice]
-- grain: [run_id, probe, split]
-- requires: [_normalised.sql]
SELECT run_id, probe, split, value, n
FROM normalised_accuracy WHERE task = 'choice' AND normalisation = 'pmi'
ORDER BY ALL
