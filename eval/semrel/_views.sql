-- Shared temporary views of the semantic-relation metrics (Cao, Yamada, Teufel, Tokunaga: "A
-- Comprehensive Evaluation of Semantic Relation Knowledge of Pretrained Language Models and
-- Humans"). Not a metric: the metric files of eval/semrel name it in their `requires` header
-- and eval.sqlfile.run_metric executes it before them; in the DuckDB CLI run
-- `.read eval/semrel/_views.sql` first. Only temporary views and macros (works read-only).
--
-- Conventions
-- - Relations: HYP hypernymy, HPO hyponymy, HOL holonymy, MER meronymy (asymmetric), ANT
--   antonymy, SYN synonymy (symmetric); probe semrel/<code in lower case>, task relatum.
-- - Agent = runs.model ('human' for people). One done run per (agent, probe): the latest
--   finished one.
-- - A probe (in the paper's sense) = (instance, prompt_id). Words are compared lower-cased.
-- - Shared vocabulary: the words in model_vocab (any vocab) of every compared model, i.e. every
--   non-human model with a semrel run that has model_vocab rows (a model without rows imposes
--   no restriction; with no such model nothing is restricted). Relatum sets are limited to
--   it; model lists are filtered to it and re-ranked (rank = order among the kept words);
--   human lists are not filtered. A word repeated in a list keeps its best rank only.

CREATE OR REPLACE TEMP VIEW semrel_relations AS
SELECT * FROM (VALUES
    ('HYP', 'semrel/hyp', 'asymmetric'), ('HPO', 'semrel/hpo', 'asymmetric'),
    ('HOL', 'semrel/hol', 'asymmetric'), ('MER', 'semrel/mer', 'asymmetric'),
    ('ANT', 'semrel/ant', 'symmetric'),  ('SYN', 'semrel/syn', 'symmetric')
) AS t(relation, probe, kind);

-- The scored runs: one per (model, relation probe), the latest finished done relatum run.
CREATE OR REPLACE TEMP VIEW semrel_runs AS
SELECT run_id, model, probe, relation, is_human
FROM (
    SELECT r.run_id, r.model, r.probe, rel.relation,
           r.model = 'human' OR coalesce(r.backend = 'human', false) AS is_human,
           row_number() OVER (PARTITION BY r.model, r.probe
                              ORDER BY r.finished_at DESC NULLS LAST, r.run_id DESC) AS nth
    FROM runs r JOIN semrel_relations rel USING (probe)
    WHERE r.task = 'relatum' AND r.status = 'done'
)
WHERE nth = 1;

-- Compared models that have a vocabulary, and the words all of them share.
CREATE OR REPLACE TEMP VIEW semrel_vocab_models AS
SELECT DISTINCT r.model
FROM semrel_runs r
WHERE NOT r.is_human AND EXISTS (SELECT 1 FROM model_vocab v WHERE v.model = r.model);

CREATE OR REPLACE TEMP VIEW semrel_shared_vocab AS
SELECT lower(v.word) AS word
FROM model_vocab v JOIN semrel_vocab_models USING (model)
GROUP BY ALL
HAVING count(DISTINCT v.model) = (SELECT count(*) FROM semrel_vocab_models);

-- semrel_keep(word): the word is in the shared vocabulary (always true without one).
CREATE OR REPLACE TEMP MACRO semrel_keep(w) AS (
    NOT EXISTS (SELECT 1 FROM semrel_vocab_models)
    OR w IN (SELECT word FROM semrel_shared_vocab)
);

-- The relation probes' instances: word = target, gold = the limited relatum set (may be
-- empty), raw_gold = the set before limiting.
CREATE OR REPLACE TEMP VIEW semrel_instances AS
WITH raw AS (
    SELECT i.probe, rel.relation, i.split, i.instance_id, lower(i.target) AS word,
           list_distinct(list_transform(coalesce(i.gold, []), lambda g: lower(g))) AS raw_gold
    FROM instances i JOIN semrel_relations rel USING (probe)
),
kept AS (
    SELECT probe, split, instance_id, list(g ORDER BY g) AS gold
    FROM (SELECT probe, split, instance_id, unnest(raw_gold) AS g FROM raw)
    WHERE semrel_keep(g)
    GROUP BY ALL
)
SELECT raw.*, coalesce(kept.gold, []::VARCHAR[]) AS gold
FROM raw LEFT JOIN kept USING (probe, split, instance_id);

-- Every (word, relation, relatum) of the limited sets: semrel/relata plus the probes' gold.
CREATE OR REPLACE TEMP VIEW semrel_sets AS
SELECT DISTINCT word, relation, relatum
FROM (
    SELECT lower(i.target) AS word, upper(json_extract_string(i.fields, '$.relation'))
           AS relation, lower(unnest(i.gold)) AS relatum
    FROM instances i WHERE i.probe = 'semrel/relata'
    UNION ALL
    SELECT word, relation, unnest(gold) AS relatum FROM semrel_instances
)
WHERE relation IN (SELECT relation FROM semrel_relations) AND semrel_keep(relatum);

-- Ranked answer lists, one row per (agent, probe): answers[1] is the top answer.
CREATE OR REPLACE TEMP VIEW semrel_lists AS
WITH kept AS (
    SELECT r.model, r.is_human, r.run_id, r.probe, r.relation, s.split, s.instance_id,
           s.prompt_id, lower(s.token) AS token, min(s.rank) AS rank
    FROM responses s JOIN semrel_runs r USING (run_id, probe)
    WHERE r.is_human OR semrel_keep(lower(s.token))
    GROUP BY ALL
)
SELECT model, is_human, run_id, probe, relation, split, instance_id, prompt_id,
       list(token ORDER BY rank) AS answers
FROM kept
GROUP BY ALL;

-- The lists with their instance's word and limited gold set.
CREATE OR REPLACE TEMP VIEW semrel_probes AS
SELECT l.*, i.word, i.gold
FROM semrel_lists l JOIN semrel_instances i USING (probe, relation, split, instance_id);

-- Soundness (s_hit: the top answer is in the set) and completeness (c = |top-k ∩ set| / k,
-- k = min(|set|, list length); 0 for an empty list) per probe with a non-empty limited set.
CREATE OR REPLACE TEMP VIEW semrel_probe_sc AS
SELECT model, is_human, run_id, probe, relation, split, instance_id, prompt_id, word,
       coalesce(list_contains(gold, answers[1]), false)::INTEGER AS s_hit,
       least(len(gold), len(answers)) AS k,
       CASE WHEN len(answers) = 0 THEN 0.0
            ELSE len(list_filter(answers[1:least(len(gold), len(answers))],
                                 lambda a: list_contains(gold, a)))
                 / least(len(gold), len(answers)) END AS c
FROM semrel_probes
WHERE len(gold) > 0;

-- Tuples (word, relation, relatum) of semrel/tuples with both words kept.
CREATE OR REPLACE TEMP VIEW semrel_tuples AS
SELECT DISTINCT lower(target) AS word,
       upper(json_extract_string(fields, '$.relation')) AS relation,
       lower(coalesce(json_extract_string(fields, '$.relatum'), gold[1])) AS relatum
FROM instances
WHERE probe = 'semrel/tuples' AND semrel_keep(lower(target))
  AND semrel_keep(lower(coalesce(json_extract_string(fields, '$.relatum'), gold[1])));

-- Trick probes: for tuple (w, r, v), the agent's list on semrel/<r> whose target is v, per
-- prompt; hit = w is in the top k (k = 1, 5, 10). Symmetry M_k = share of hits, asymmetry
-- A_k = share of misses.
CREATE OR REPLACE TEMP VIEW semrel_trick AS
SELECT p.model, p.is_human, p.run_id, p.probe, t.relation, rel.kind, t.word, t.relatum,
       p.split, p.instance_id, p.prompt_id, ks.k,
       list_contains(p.answers[1:ks.k], t.word) AS hit
FROM semrel_tuples t
JOIN semrel_relations rel USING (relation)
JOIN semrel_probes p ON p.probe = rel.probe AND p.word = t.relatum
CROSS JOIN (VALUES (1), (5), (10)) AS ks(k);

-- Human response entropy per probe (from human_responses; each annotator's distinct answers):
-- an answer of annotator a weighs 1 / (n_a * annotators); p pools equal answers;
-- r = H(p) / H_max, H_max = the entropy of the same weights unpooled; r = 1 exactly when no
-- two annotators share an answer (shared = false).
CREATE OR REPLACE TEMP VIEW semrel_probe_r AS
WITH answers AS (
    SELECT DISTINCT h.probe, rel.relation, h.instance_id, h.prompt_id, h.annotator,
           lower(trim(h.response)) AS response
    FROM human_responses h JOIN semrel_relations rel USING (probe)
    WHERE trim(h.response) <> ''
),
per_annotator AS (
    SELECT probe, instance_id, prompt_id, annotator, count(*) AS n_answers
    FROM answers GROUP BY ALL
),
per_probe AS (
    SELECT probe, instance_id, prompt_id, count(*) AS annotators
    FROM per_annotator GROUP BY ALL
),
weighted AS (
    SELECT a.*, pp.annotators, 1.0 / (pa.n_answers * pp.annotators) AS w
    FROM answers a
    JOIN per_annotator pa USING (probe, instance_id, prompt_id, annotator)
    JOIN per_probe pp USING (probe, instance_id, prompt_id)
),
pooled AS (
    SELECT probe, relation, instance_id, prompt_id, response, sum(w) AS p,
           count(*) AS given_by
    FROM weighted GROUP BY ALL
),
entropy AS (
    SELECT probe, relation, instance_id, prompt_id, -sum(p * ln(p)) AS h,
           max(given_by) > 1 AS shared
    FROM pooled GROUP BY ALL
),
entropy_max AS (
    SELECT probe, instance_id, prompt_id, annotators, -sum(w * ln(w)) AS h_max
    FROM weighted GROUP BY ALL
)
SELECT e.probe, e.relation, e.instance_id, e.prompt_id, m.annotators, e.shared, e.h, m.h_max,
       CASE WHEN e.shared THEN e.h / m.h_max ELSE 1.0 END AS r
FROM entropy e JOIN entropy_max m USING (probe, instance_id, prompt_id);

-- Distinguishability per probe: for a probe of relation r on word w (with a non-empty limited
-- set, as in S and C) and another relation s whose limited set S_s(w) is non-empty,
-- distinguished = the top k holds no word of S_s(w) (k = 1..10).
CREATE OR REPLACE TEMP VIEW semrel_probe_d AS
WITH other_sets AS (
    SELECT word, relation AS other, list(relatum) AS relata FROM semrel_sets GROUP BY ALL
)
SELECT p.model, p.is_human, p.run_id, p.probe, p.relation, o.other, p.split, p.instance_id,
       p.prompt_id, ks.k, NOT list_has_any(p.answers[1:ks.k], o.relata) AS distinguished
FROM semrel_probes p
JOIN other_sets o ON o.word = p.word AND o.other <> p.relation
CROSS JOIN range(1, 11) AS ks(k)
WHERE len(p.gold) > 0;
