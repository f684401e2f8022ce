-- Support file of the OntoLAMA metrics: one score per (run, instance, prompt, class, scoring)
-- from the label words' scores (scores.score: log P(word at the mask) for masked LMs, the
-- log-likelihood of the filled template's continuation for causal LMs).
--   sum_prob      the paper's equation (He et al. 2023, L149): P(y | x) is the SUM of the
--                 probabilities of the class's label words (normalised over all label words,
--                 which does not change the argmax), so the class score is
--                 log sum_v exp(score_v) (a log-sum-exp, computed stably). The default.
--   mean_logprob  OpenPrompt's verbaliser: the MEAN of the words' log-probabilities.
-- With one word per class (L1, L2) both are the same; they differ for L3 {Yes, Right}/{No, Wrong}.
-- Only finished subsumption runs. template and label_set: what the score's prompt_id stands
-- for (the prompts table); is_kshot: a K-shot run (runs.method), trained_scoring: the class
-- scoring it was trained with (runs.scoring; NULL for zero-shot runs).
CREATE OR REPLACE TEMP VIEW ontolama_class_scores AS
WITH subsumption_runs AS (
    SELECT run_id, coalesce(method = 'kshot', false) AS is_kshot, scoring AS trained_scoring
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
SELECT c.run_id, c.probe, c.split, c.instance_id, c.prompt_id, c.label, p.template,
       p.label_set, r.is_kshot, r.trained_scoring, 'sum_prob' AS scoring, c.sum_prob AS score
FROM per_class c JOIN subsumption_runs r USING (run_id)
LEFT JOIN prompts p USING (run_id, prompt_id)
UNION ALL
SELECT c.run_id, c.probe, c.split, c.instance_id, c.prompt_id, c.label, p.template,
       p.label_set, r.is_kshot, r.trained_scoring, 'mean_logprob' AS scoring,
       c.mean_logprob AS score
FROM per_class c JOIN subsumption_runs r USING (run_id)
LEFT JOIN prompts p USING (run_id, prompt_id);

-- One row per (run, instance, prompt, scoring): whether the gold class scored strictly higher
-- than the other class (a tie counts as wrong).
CREATE OR REPLACE TEMP VIEW ontolama_correct AS
SELECT c.run_id, c.probe, c.split, c.instance_id, c.prompt_id, c.scoring,
       any_value(c.template) AS template, any_value(c.label_set) AS label_set,
       any_value(c.is_kshot) AS is_kshot, any_value(c.trained_scoring) AS trained_scoring,
       CASE WHEN max(c.score) FILTER (WHERE c.label = i.gold[1])
                 > coalesce(max(c.score) FILTER (WHERE c.label <> i.gold[1]), '-inf'::DOUBLE)
            THEN 1.0 ELSE 0.0 END AS correct
FROM ontolama_class_scores c JOIN instances i USING (probe, split, instance_id)
WHERE len(i.gold) > 0
GROUP BY c.run_id, c.probe, c.split, c.instance_id, c.prompt_id, c.scoring;

-- One row per K-shot run: the test accuracy (over its instances) with the class scoring the
-- run was trained with (sum_prob, the paper's equation, when the run does not say). A K-shot
-- run scores one template x label-word set, so template and label_set are the run's.
CREATE OR REPLACE TEMP VIEW ontolama_kshot_runs AS
SELECT c.run_id, c.probe, c.split, c.template, c.label_set, avg(c.correct) AS accuracy,
       count(*) AS n
FROM ontolama_correct c
WHERE c.is_kshot AND c.scoring = coalesce(c.trained_scoring, 'sum_prob')
GROUP BY c.run_id, c.probe, c.split, c.template, c.label_set;
