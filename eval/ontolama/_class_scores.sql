-- Support file of the OntoLAMA metrics: one score per (run, instance, prompt, class, scoring)
-- from the label words' scores (scores.score: log P(word at the mask) for masked LMs, the
-- log-likelihood of the filled template's continuation for causal LMs).
--   sum_prob      the paper's equation (He et al. 2023, L149): P(y | x) is the SUM of the
--                 probabilities of the class's label words (normalised over all label words,
--                 which does not change the argmax), so the class score is
--                 log sum_v exp(score_v) (a log-sum-exp, computed stably). The default.
--   mean_logprob  OpenPrompt's verbaliser: the MEAN of the words' log-probabilities.
-- With one word per class (L1, L2) both are the same; they differ for L3 {Yes, Right}/{No, Wrong}.
-- Only finished subsumption runs; kshot is the run's K-shot settings (NULL for zero-shot).
CREATE OR REPLACE TEMP VIEW ontolama_class_scores AS
WITH subsumption_runs AS (
    SELECT run_id, list_sort(json_keys(config, '$.params.label_words')) AS set_names,
           json_extract(config, '$.kshot') AS kshot
    FROM runs WHERE task = 'subsumption' AND status = 'done'
),
words AS (
    SELECT s.run_id, s.probe, s.split, s.instance_id, s.prompt_id, s.label, s.score,
           max(s.score) OVER (PARTITION BY s.run_id, s.probe, s.split, s.instance_id,
                                           s.prompt_id, s.label) AS top
    FROM scores s JOIN subsumption_runs USING (run_id)
),
per_class AS (
    SELECT run_id, probe, split, instance_id, prompt_id, label,
           any_value(top) + ln(sum(exp(score - top))) AS sum_prob,
           avg(score) AS mean_logprob
    FROM words
    GROUP BY ALL
)
SELECT c.run_id, c.probe, c.split, c.instance_id, c.prompt_id, c.label, r.set_names, r.kshot,
       'sum_prob' AS scoring, c.sum_prob AS score
FROM per_class c JOIN subsumption_runs r USING (run_id)
UNION ALL
SELECT c.run_id, c.probe, c.split, c.instance_id, c.prompt_id, c.label, r.set_names, r.kshot,
       'mean_logprob' AS scoring, c.mean_logprob AS score
FROM per_class c JOIN subsumption_runs r USING (run_id);

-- One row per (run, instance, prompt, scoring): whether the gold class scored strictly higher
-- than the other class (a tie counts as wrong).
CREATE OR REPLACE TEMP VIEW ontolama_correct AS
SELECT c.run_id, c.probe, c.split, c.instance_id, c.prompt_id, c.scoring,
       any_value(c.set_names) AS set_names, any_value(c.kshot) AS kshot,
       CASE WHEN max(c.score) FILTER (WHERE c.label = i.gold[1])
                 > coalesce(max(c.score) FILTER (WHERE c.label <> i.gold[1]), '-inf'::DOUBLE)
            THEN 1.0 ELSE 0.0 END AS correct
FROM ontolama_class_scores c JOIN instances i USING (probe, split, instance_id)
WHERE len(i.gold) > 0
GROUP BY c.run_id, c.probe, c.split, c.instance_id, c.prompt_id, c.scoring;
