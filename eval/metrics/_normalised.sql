-- Shared temporary view of the length-normalised and calibrated choice/binary accuracies
-- (lm-evaluation-harness's acc, acc_norm and acc_mutual_info; Holtzman et al. 2021, "Surface
-- Form Competition", for the domain-conditional PMI). Not a metric: the metric files
-- choice_accuracy_{per_token,norm,pmi}.sql and binary_accuracy_{per_token,norm,pmi}.sql name
-- it in their `requires` header; in the DuckDB CLI run `.read eval/metrics/_normalised.sql`
-- first. Only temporary views and macros (works read-only).
--
-- One row per scored instance with gold of a finished choice or binary run. Each candidate's
-- score is first made comparable across lengths, then averaged over the probe's prompts:
--   raw        score                              (log-probability; acc)
--   per_token  score / n_tokens                   (mean log-probability per token)
--   per_char   score / n_chars                    (acc_norm: per character of the scored
--                                                  text, its leading space left out)
--   pmi        score - baseline                   (log P(answer | prompt) - log P(answer |
--                                                  neutral context), params pmi_context)
-- A column is TRUE when the best gold candidate (choice: a candidate listed in gold; binary:
-- a label word of the gold class, case-insensitive) scores strictly higher than every other
-- candidate (a tie counts as wrong; an unscored gold answer is wrong), NULL when a score it
-- needs was not recorded (n_tokens or n_chars NULL, as in rows written before n_chars
-- existed; baseline without pmi_context).
-- normalised_accuracy holds what the six metric files report: per run, probe, split, task and
-- normalisation (per_token, per_char, pmi) the share of instances whose column is TRUE, over
-- the instances where it is not NULL (n).

CREATE OR REPLACE TEMP MACRO kgp_gold_wins(x, is_gold) AS
    CASE WHEN count(x) = count(*) THEN coalesce(
        max(x) FILTER (WHERE is_gold)
            > coalesce(max(x) FILTER (WHERE NOT is_gold), '-inf'::DOUBLE), false) END;

CREATE OR REPLACE TEMP VIEW choice_normalised AS
WITH per_candidate AS (            -- one row per (instance, candidate): means over prompts
    SELECT s.run_id, s.probe, s.split, s.instance_id, r.task, s.candidate,
           lower(s.label) AS label,
           avg(s.score) AS raw,
           CASE WHEN count(s.n_tokens) = count(*)
                THEN avg(s.score / greatest(s.n_tokens, 1)) END AS per_token,
           CASE WHEN count(s.n_chars) = count(*)
                THEN avg(s.score / greatest(s.n_chars, 1)) END AS per_char,
           CASE WHEN count(s.baseline) = count(*)
                THEN avg(s.score - s.baseline) END AS pmi
    FROM scores s JOIN runs r USING (run_id)
    WHERE r.task IN ('choice', 'binary') AND r.status = 'done'
    GROUP BY ALL
),
marked AS (                        -- is the candidate a gold answer?
    SELECT c.*,
           CASE WHEN c.task = 'binary'
                THEN list_contains(list_transform(i.gold, lambda g: lower(g)), c.label)
                ELSE list_contains(i.gold, c.candidate) END AS is_gold
    FROM per_candidate c
    JOIN instances i ON i.probe = c.probe AND i.split = c.split AND i.instance_id = c.instance_id
    WHERE len(i.gold) > 0
)
SELECT run_id, probe, split, instance_id, task,
       kgp_gold_wins(raw, is_gold) AS raw,
       kgp_gold_wins(per_token, is_gold) AS per_token,
       kgp_gold_wins(per_char, is_gold) AS per_char,
       kgp_gold_wins(pmi, is_gold) AS pmi
FROM marked
GROUP BY run_id, probe, split, instance_id, task;

CREATE OR REPLACE TEMP VIEW normalised_accuracy AS
SELECT run_id, probe, split, task, normalisation,
       avg(CASE WHEN won THEN 1.0 ELSE 0.0 END) AS value,
       count(*) AS n
FROM choice_normalised
UNPIVOT (won FOR normalisation IN (per_token, per_char, pmi))  -- NULLs left out
GROUP BY ALL;
