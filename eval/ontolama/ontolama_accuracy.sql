-- name: ontolama_accuracy
-- description: >-
--   OntoLAMA zero-shot accuracy per template and label-word set. A class's score is the MEAN of
--   its label words' scores (log-likelihood of the filled template for causal LMs, the label
--   word's log-probability at the mask for masked LMs); the instance is right when its gold
--   class scores strictly higher than the other class (a tie counts as wrong). The template
--   (T1, T2, ...) and the label-word set (L1, L2, L3) are decoded from scores.prompt_id =
--   template_index * n_sets + set_index, set_index counting the sorted names of the run's
--   params.label_words (probes/tasks/subsumption.py). Only finished subsumption runs.
-- tasks: [subsumption]
-- grain: [run_id, probe, split, template, label_set]
WITH sets AS (                    -- the sorted label-word set names of each run
    SELECT run_id, list_sort(json_keys(config, '$.params.label_words')) AS names
    FROM runs WHERE task = 'subsumption' AND status = 'done'
),
class_scores AS (                 -- one score per (instance, prompt, class): mean over words
    SELECT s.run_id, s.probe, s.split, s.instance_id, s.prompt_id, s.label,
           avg(s.score) AS score
    FROM scores s JOIN sets USING (run_id)
    GROUP BY ALL
),
per_instance AS (
    SELECT c.run_id, c.probe, c.split, c.instance_id, c.prompt_id,
           max(c.score) FILTER (WHERE c.label = i.gold[1]) AS gold_score,
           max(c.score) FILTER (WHERE c.label <> i.gold[1]) AS other_score
    FROM class_scores c JOIN instances i USING (probe, split, instance_id)
    WHERE len(i.gold) > 0
    GROUP BY ALL
)
SELECT p.run_id, p.probe, p.split,
       'T' || (p.prompt_id // len(sets.names) + 1) AS template,
       sets.names[p.prompt_id % len(sets.names) + 1] AS label_set,
       avg(CASE WHEN p.gold_score > coalesce(p.other_score, '-inf'::DOUBLE) THEN 1.0 ELSE 0.0
           END) AS value,
       count(*) AS n
FROM per_instance p JOIN sets USING (run_id)
GROUP BY ALL
ORDER BY ALL
