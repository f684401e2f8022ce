-- name: ontolama_zero_shot
-- description: >-
--   OntoLAMA zero-shot summary: the mean (value) and the population standard deviation (std,
--   as numpy.std) of the accuracy over every template x label-word set combination of a run
--   (six for the OntoLAMA probes: T1, T2 x L1, L2, L3; K-shot runs are left out), each
--   accuracy as in ontolama_accuracy
--   (a class's score is the mean of its label words' scores; a tie counts as wrong).
--   combinations says how many were averaged. Only finished subsumption runs.
-- tasks: [subsumption]
-- grain: [run_id, probe, split]
WITH combos AS (                  -- ontolama_accuracy's query, one row per combination
WITH sets AS (                    -- the sorted label-word set names of each run
    SELECT run_id, list_sort(json_keys(config, '$.params.label_words')) AS names
    FROM runs WHERE task = 'subsumption' AND status = 'done'
          AND json_extract(config, '$.kshot') IS NULL           -- zero-shot runs only
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
)
SELECT run_id, probe, split, avg(value) AS value, stddev_pop(value) AS std,
       count(*) AS combinations, max(n) AS n
FROM combos
GROUP BY ALL
ORDER BY ALL
