-- name: ontolama_accuracy
-- description: >-
--   OntoLAMA accuracy per template, label-word set and class scoring (_class_scores.sql):
--   sum_prob, the paper's equation (the sum of the class's label-word probabilities; the
--   default) and mean_logprob (OpenPrompt's mean of their log-probabilities); they differ only
--   for L3. An instance is right when its gold class scores strictly higher (a tie is wrong).
--   The template (T1, T2) and the set (L1, L2, L3) of a score's prompt_id come from the
--   prompts table. Zero-shot and K-shot runs.
-- tasks: [subsumption]
-- grain: [run_id, probe, split, template, label_set, scoring]
-- requires: [_class_scores.sql]
SELECT run_id, probe, split, template, label_set, scoring, avg(correct) AS value, count(*) AS n
FROM ontolama_correct
GROUP BY ALL
ORDER BY ALL
