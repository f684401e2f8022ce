-- name: binary_accuracy_pmi
-- description: >-
--   Calibrated binary accuracy (PMI): each label word's score minus its log-probability after
--   the probe's neutral context (params pmi_context) before the mean over prompts; otherwise
--   as binary_accuracy. Only runs of probes with pmi_context.
--   Only finished runs (status done); see _normalised.sql.
-- tasks: [binary]
-- grain: [run_id, probe, split]
-- requires: [_normalised.sql]
SELECT run_id, probe, split, value, n
FROM normalised_accuracy WHERE task = 'binary' AND normalisation = 'pmi'
ORDER BY ALL
