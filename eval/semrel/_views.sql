-- Shared temporary views of the semantic-relation metrics (Cao, Yamada, Teufel, Tokunaga: "A
-- Comprehensive Evaluation of Semantic Relation Knowledge of Pretrained Language Models and
-- Humans", 2025). Not a metric: the metric files of eval/semrel name it in their `requires`
-- header and eval.sqlfile.run_metric executes it before them; in the DuckDB CLI run
-- `.read eval/semrel/_views.sql` first. Only temporary views and macros (works read-only).
--
-- Settings (DuckDB variables; eval.semrel_report sets them from queries/semrel/shared_vocab.yaml
-- and its options; unset = the default):
-- - semrel_vocab_models (VARCHAR[]): the declared model list whose shared vocabulary limits
--   tuples, targets and relatum sets (section 4.2: "contained in the intersection of the
--   vocabularies of all models"). Unset: nothing is limited.
-- - semrel_model_lists: 'full' (default; a model's list is its ranking over its own lower-case
--   whole words, as long as stored) or 'shared' (filtered to the shared vocabulary and
--   re-ranked, kgprobe's earlier reading).
-- - semrel_absent: how rho (eq. 24) treats an s-relatum that is not in L_k (the paper leaves it
--   undefined): 'present' (default; delta(w, p, s) = the mean rho of the s-relata that are in
--   L_k, 1 when none is), 'one' (each absent relatum counts rho = 1) or 'skip' (absent relata
--   left out; a probe with none in L_k is left out of delta(r, s)).
-- - semrel_rank: 'zero' (default; rho = (rank - 1) / k, the top word 0) or 'one' (rho =
--   rank / k). docs/semrel.md gives the human AuDC under each reading.
-- - semrel_conflicts: 'all' (default; relationally ambiguous relata removed from every set, tuple
--   relata included) or 'keep-tuples'; see semrel_restored below.
-- - semrel_entropy_population: 'file' (default; R over every loaded human answer) or 'targets'
--   (R over W^r's answers only); see semrel_entropy_tokens below.
-- - semrel_targets: 'answered' (default; W^r = the words the annotators answered) or 'tuples'
--   (W^r = the targets of the reconstructed tuples); see semrel_targets below.
--
-- Conventions
-- - Relations: HYP, HPO, HOL, MER (asymmetric), ANT, SYN (symmetric); probe semrel/<code in
--   lower case>; trick probes semrel/<code>-trick (asymmetric relations only).
-- - Agent = runs.model ('human' for people). One done run per (agent, probe): the latest.
-- - A probe (paper's sense) = (instance, prompt_id). Words are compared lower-cased.

CREATE OR REPLACE TEMP VIEW semrel_relations AS
SELECT * FROM (VALUES
    ('HYP', 'semrel/hyp', 'asymmetric', 'semrel/hyp-trick'),
    ('HPO', 'semrel/hpo', 'asymmetric', 'semrel/hpo-trick'),
    ('HOL', 'semrel/hol', 'asymmetric', 'semrel/hol-trick'),
    ('MER', 'semrel/mer', 'asymmetric', 'semrel/mer-trick'),
    ('ANT', 'semrel/ant', 'symmetric', NULL),
    ('SYN', 'semrel/syn', 'symmetric', NULL)
) AS t(relation, probe, kind, trick_probe);

-- Every probe of a relation: its own (trick = false) and its trick probe (trick = true).
CREATE OR REPLACE TEMP VIEW semrel_all_probes AS
SELECT relation, probe, kind, false AS trick FROM semrel_relations
UNION ALL
SELECT relation, trick_probe, kind, true FROM semrel_relations WHERE trick_probe IS NOT NULL;

-- The scored runs: one per (model, probe), the latest finished done relatum run.
CREATE OR REPLACE TEMP VIEW semrel_runs AS
SELECT run_id, model, probe, relation, trick, is_human
FROM (
    SELECT r.run_id, r.model, r.probe, p.relation, p.trick,
           r.model = 'human' OR coalesce(r.family = 'human', false) AS is_human,
           row_number() OVER (PARTITION BY r.model, r.probe
                              ORDER BY r.finished_at DESC NULLS LAST, r.run_id DESC) AS nth
    FROM runs r JOIN semrel_all_probes p USING (probe)
    WHERE r.task = 'relatum' AND r.status = 'done'
)
WHERE nth = 1;

-- The declared models (semrel_vocab_models) and the words all of them share.
CREATE OR REPLACE TEMP VIEW semrel_vocab_models AS
SELECT DISTINCT unnest(coalesce(getvariable('semrel_vocab_models'), []::VARCHAR[])) AS model;

CREATE OR REPLACE TEMP VIEW semrel_shared_vocab AS
SELECT lower(v.word) AS word
FROM model_vocab v JOIN semrel_vocab_models USING (model)
WHERE v.vocab = 'lowercase'
GROUP BY ALL
HAVING count(DISTINCT v.model) = (SELECT count(*) FROM semrel_vocab_models);

-- semrel_keep(word): the word is in the shared vocabulary (always true without a declaration).
CREATE OR REPLACE TEMP MACRO semrel_keep(w) AS (
    NOT EXISTS (SELECT 1 FROM semrel_vocab_models)
    OR w IN (SELECT word FROM semrel_shared_vocab)
);

-- Tuples T^r after augmentation with both words in the shared vocabulary; source = the tuple
-- is in a source (before augmentation).
CREATE OR REPLACE TEMP VIEW semrel_tuples AS
SELECT DISTINCT lower(target) AS word,
       upper(json_extract_string(fields, '$.relation')) AS relation,
       lower(gold[1]) AS relatum,
       coalesce(list_contains(json_extract_string(fields, '$.derivation[*]'), 'source'), false)
           AS source
FROM instances
WHERE probe = 'semrel/tuples' AND semrel_keep(lower(target)) AND semrel_keep(lower(gold[1]));

-- W^r (section 4.2, Table 1). semrel_targets 'answered' (default): the words of the relation
-- probe that the annotators answered (the instance field `answered`, from the response file;
-- section 6.1: the probes of Table 1 are what the questionnaires held), limited to the shared
-- vocabulary; a relation without any answered word (no response file in the store) falls back
-- to its tuple targets. 'tuples': the targets of the relation's tuples T^r (kgprobe's earlier
-- reading; our tuples are a reconstruction, so they hold other words than the paper's).
CREATE OR REPLACE TEMP VIEW semrel_answered AS
SELECT DISTINCT lower(i.target) AS word, p.relation
FROM instances i JOIN semrel_all_probes p USING (probe)
WHERE NOT p.trick AND semrel_keep(lower(i.target))
  AND coalesce(json_extract_string(i.fields, '$.answered') IN ('true', '1'), false);

CREATE OR REPLACE TEMP VIEW semrel_targets AS
SELECT word, relation FROM semrel_answered
WHERE coalesce(getvariable('semrel_targets'), 'answered') = 'answered'
UNION
SELECT DISTINCT word, relation FROM semrel_tuples
WHERE coalesce(getvariable('semrel_targets'), 'answered') = 'tuples'
   OR relation NOT IN (SELECT relation FROM semrel_answered);

-- Conflict removal (section 4.3, "we therefore solve this problem by removing all relationally
-- ambiguous relata for each target word"). The exported relatum sets (semrel-relata.rq) hold
-- the rule 'all' (default): a relatum in two relations' sets of a word is removed from every
-- set, tuple relata included. semrel_conflicts 'keep-tuples': a tuple relatum (w, r, v) removed
-- that way goes back into Y^r(w) (it stays out of the other sets), unless w has v as a tuple
-- relatum of two relations. semrel_restored holds those relata (empty under 'all').
CREATE OR REPLACE TEMP VIEW semrel_restored AS
WITH t AS (
    SELECT DISTINCT lower(target) AS word,
           upper(json_extract_string(fields, '$.relation')) AS relation,
           lower(gold[1]) AS relatum
    FROM instances WHERE probe = 'semrel/tuples'
),
in_sets AS (
    SELECT DISTINCT lower(target) AS word, lower(unnest(gold)) AS relatum
    FROM instances WHERE probe = 'semrel/relata'
),
one_relation AS (
    SELECT word, relatum FROM t GROUP BY ALL HAVING count(DISTINCT relation) = 1
)
SELECT t.word, t.relation, t.relatum
FROM t SEMI JOIN one_relation USING (word, relatum)
ANTI JOIN in_sets USING (word, relatum)
WHERE coalesce(getvariable('semrel_conflicts'), 'all') = 'keep-tuples'
  AND t.relatum <> t.word;

-- The relation and trick probes' instances of kept words: gold = the set limited to the
-- shared vocabulary (may be empty), raw_gold = before limiting (with semrel_restored's relata
-- under 'keep-tuples'). A relation probe keeps the words of W^r; a trick probe the relata of
-- the relation's tuples.
CREATE OR REPLACE TEMP VIEW semrel_instances AS
WITH restored AS (
    SELECT word, relation, list(relatum) AS relata FROM semrel_restored GROUP BY ALL
),
raw AS (
    SELECT i.probe, p.relation, p.trick, i.split, i.instance_id, lower(i.target) AS word,
           list_distinct(list_concat(list_transform(coalesce(i.gold, []), lambda g: lower(g)),
                                     coalesce(r.relata, []::VARCHAR[]))) AS raw_gold
    FROM instances i JOIN semrel_all_probes p USING (probe)
    LEFT JOIN restored r ON r.word = lower(i.target) AND r.relation = p.relation
),
kept AS (
    SELECT probe, split, instance_id, list(g ORDER BY g) AS gold
    FROM (SELECT probe, split, instance_id, unnest(raw_gold) AS g FROM raw)
    WHERE semrel_keep(g)
    GROUP BY ALL
)
SELECT raw.*, coalesce(kept.gold, []::VARCHAR[]) AS gold
FROM raw LEFT JOIN kept USING (probe, split, instance_id)
WHERE (NOT raw.trick AND (raw.word, raw.relation) IN (SELECT (word, relation) FROM semrel_targets))
   OR (raw.trick AND (raw.word, raw.relation) IN (SELECT (relatum, relation) FROM semrel_tuples));

-- Every (word, relation, relatum) of the limited relatum sets Y^r(w) (semrel_conflicts: the
-- restored tuple relata too).
CREATE OR REPLACE TEMP VIEW semrel_sets AS
SELECT DISTINCT word, relation, relatum
FROM (
    SELECT lower(i.target) AS word, upper(json_extract_string(i.fields, '$.relation'))
           AS relation, lower(unnest(i.gold)) AS relatum
    FROM instances i WHERE i.probe = 'semrel/relata'
    UNION ALL
    SELECT word, relation, relatum FROM semrel_restored
)
WHERE relation IN (SELECT relation FROM semrel_relations) AND semrel_keep(relatum);

-- Ranked answer lists, one row per (agent, probe, instance, prompt): answers[1] is the top.
-- A model's non-word token (vocab 'all': '⟨token⟩', probes.engine.wordvocab.nonword) keeps its case,
-- so two tokens never merge; words are lower-cased.
CREATE OR REPLACE TEMP VIEW semrel_lists AS
WITH kept AS (
    SELECT r.model, r.is_human, r.run_id, r.probe, r.relation, r.trick, s.split,
           s.instance_id, s.prompt_id,
           CASE WHEN s.token LIKE '⟨%' THEN s.token ELSE lower(s.token) END AS token,
           min(s.rank) AS rank
    FROM responses s JOIN semrel_runs r USING (run_id, probe)
    WHERE r.is_human OR coalesce(getvariable('semrel_model_lists'), 'full') = 'full'
       OR semrel_keep(lower(s.token))
    GROUP BY ALL
)
SELECT model, is_human, run_id, probe, relation, trick, split, instance_id, prompt_id,
       list(token ORDER BY rank) AS answers
FROM kept
GROUP BY ALL;

-- The lists with their instance's word and limited gold set (relation and trick probes).
CREATE OR REPLACE TEMP VIEW semrel_all_lists AS
SELECT l.*, i.word, i.gold
FROM semrel_lists l JOIN semrel_instances i USING (probe, relation, trick, split, instance_id);

-- The relation probes X^r (no trick probes): what S, C, P, D and OOR score.
CREATE OR REPLACE TEMP VIEW semrel_probes AS
SELECT * FROM semrel_all_lists WHERE NOT trick;

-- Soundness (s_hit: Precision@1, eq. 11) and completeness (c: Recall@k, eq. 13, k = min(|Y|,
-- list length); 0 for an empty list) per probe with a non-empty limited set.
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

-- Per word (eqs. 11 and 13): the mean over the word's prompts.
CREATE OR REPLACE TEMP VIEW semrel_word_sc AS
SELECT model, is_human, probe, relation, word, avg(s_hit) AS s, avg(c) AS c,
       count(*) AS prompts
FROM semrel_probe_sc GROUP BY ALL;

-- Symmetry / asymmetry per (tuple, prompt, k), eqs. 1-2: fwd = v in the top k of L(w, p),
-- bwd = w in the top k of L(v, p) (the trick probe: v in the target slot of a prompt of r;
-- for ANT and SYN v is itself a target of r). mu = fwd and bwd, alpha = fwd and not bwd.
CREATE OR REPLACE TEMP VIEW semrel_trick AS
WITH fwd AS (
    SELECT model, is_human, relation, prompt_id, word, answers FROM semrel_all_lists
    WHERE NOT trick
),
bwd AS (
    SELECT DISTINCT ON (model, relation, prompt_id, word)
           model, relation, prompt_id, word, answers
    FROM semrel_all_lists
    ORDER BY model, relation, prompt_id, word, trick
)
SELECT f.model, f.is_human, t.relation, rel.kind, t.word, t.relatum, f.prompt_id, ks.k,
       list_contains(f.answers[1:ks.k], t.relatum) AS fwd,
       list_contains(b.answers[1:ks.k], t.word) AS bwd,
       (list_contains(f.answers[1:ks.k], t.relatum)
        AND list_contains(b.answers[1:ks.k], t.word))::INTEGER AS mu,
       (list_contains(f.answers[1:ks.k], t.relatum)
        AND NOT list_contains(b.answers[1:ks.k], t.word))::INTEGER AS alpha
FROM semrel_tuples t
JOIN semrel_relations rel USING (relation)
JOIN fwd f ON f.relation = t.relation AND f.word = t.word
JOIN bwd b ON b.model = f.model AND b.relation = t.relation AND b.prompt_id = f.prompt_id
          AND b.word = t.relatum
CROSS JOIN (VALUES (1), (5), (10)) AS ks(k);

-- Per tuple (eqs. 15 and 17): the mean over the prompts with both lists.
CREATE OR REPLACE TEMP VIEW semrel_tuple_ma AS
SELECT model, is_human, relation, kind, word, relatum, k, avg(mu) AS m, avg(alpha) AS a,
       count(*) AS prompts
FROM semrel_trick GROUP BY ALL;

-- Human answers: tokens (one per answer of one annotator) of the relation probes' kept
-- instances, with the probe's word.
CREATE OR REPLACE TEMP VIEW semrel_human_tokens AS
SELECT h.probe, i.relation, h.instance_id, h.prompt_id, i.word, h.annotator, h.position,
       lower(trim(h.response)) AS response
FROM human_responses h
JOIN semrel_instances i ON i.probe = h.probe AND i.instance_id = h.instance_id AND NOT i.trick
WHERE trim(h.response) <> '';

-- The human answers whose R is computed (semrel_entropy_population): 'file' (default) = every
-- loaded answer of the relation probes, whatever the word (the response file, no vocabulary
-- limit: the population of section 6.1's 93,120 tokens and, by its counts, of Table 3 and
-- footnote 15: R = 0 for HOL 17 and SYN 36 as in Table 3 on the file, 16 and 34 on W^r);
-- 'targets' = the answers of W^r only (semrel_human_tokens). in_targets: the probe's word is
-- in W^r (the prototypicality set takes only those).
CREATE OR REPLACE TEMP VIEW semrel_entropy_tokens AS
SELECT h.probe, p.relation, h.instance_id, h.prompt_id, lower(i.target) AS word,
       lower(trim(h.response)) AS response,
       (h.probe, h.instance_id) IN (SELECT (probe, instance_id) FROM semrel_instances
                                    WHERE NOT trick) AS in_targets
FROM human_responses h
JOIN semrel_all_probes p ON p.probe = h.probe AND NOT p.trick
JOIN instances i ON i.probe = h.probe AND i.instance_id = h.instance_id
WHERE trim(h.response) <> ''
  AND (coalesce(getvariable('semrel_entropy_population'), 'file') = 'file'
       OR (h.probe, h.instance_id) IN (SELECT (probe, instance_id) FROM semrel_instances
                                       WHERE NOT trick));

-- Human response entropy R per probe (eq. 19): p(v) = the pooled normalised frequency of
-- answer v over all annotators' answer tokens; R = H(p) / log2 |D|, |D| = distinct answers;
-- R = 0 when |D| = 1. n_distinct is Table 3's "length".
CREATE OR REPLACE TEMP VIEW semrel_probe_r AS
WITH counts AS (
    SELECT probe, relation, instance_id, prompt_id, word, in_targets, response, count(*) AS c
    FROM semrel_entropy_tokens GROUP BY ALL
),
p AS (
    SELECT *, c / sum(c) OVER (PARTITION BY probe, instance_id, prompt_id) AS p FROM counts
)
-- The entropy is summed in a fixed order (list_sum over the terms sorted by count, then
-- answer), not by sum(), whose order follows DuckDB's threads, and R is rounded to 12 decimals:
-- probes whose R is equal (every uniform answer distribution has R = 1, whatever |D|) get the
-- same number, so the ties of the Mann-Whitney tests (footnote 15) are the true ones and do not
-- change between two runs.
SELECT probe, relation, instance_id, prompt_id, word, in_targets, count(*) AS n_distinct,
       sum(c) AS tokens, -list_sum(list(p * log2(p) ORDER BY c DESC, response)) AS h,
       CASE WHEN count(*) = 1 THEN 0.0
            ELSE round(-list_sum(list(p * log2(p) ORDER BY c DESC, response))
                       / log2(count(*)), 12)
       END AS r,
       list(response ORDER BY c DESC, response) AS answers
FROM p GROUP BY ALL;

-- semrel_rank_base: 1 when rho = (rank - 1) / k (default: the top word has rho 0), 0 when
-- rho = rank / k (the top word has rho 1 / k); see semrel_rank (variable: 'zero' or 'one').
CREATE OR REPLACE TEMP MACRO semrel_rank_base() AS (
    CASE WHEN coalesce(getvariable('semrel_rank'), 'zero') = 'zero' THEN 1 ELSE 0 END
);

-- Distinguishability per (probe of r, other relation s), eq. 24: k = |Y^r(w)| (the limited
-- set of the probed relation), L_k = the top k; rho(v) = rank of v in L_k / k; an s-relatum
-- absent from L_k counts as rho = 1 ('one') or is left out ('skip', semrel_absent).
CREATE OR REPLACE TEMP VIEW semrel_probe_delta AS
WITH s_sets AS (
    SELECT word, relation AS other, list(relatum) AS relata FROM semrel_sets GROUP BY ALL
),
rhos AS (
    SELECT p.model, p.is_human, p.probe, p.relation, o.other, p.word, p.instance_id,
           p.prompt_id, len(p.gold) AS k, v.relatum,
           list_position(p.answers[1:len(p.gold)], v.relatum) AS rank
    FROM semrel_probes p
    JOIN s_sets o ON o.word = p.word
    CROSS JOIN LATERAL (SELECT unnest(o.relata) AS relatum) v
    WHERE len(p.gold) > 0
)
SELECT model, is_human, probe, relation, other, word, instance_id, prompt_id, k,
       count(*) AS relata, count(rank) AS present,
       CASE coalesce(getvariable('semrel_absent'), 'present')
            WHEN 'skip' THEN avg((rank - semrel_rank_base()) / k)
            WHEN 'present' THEN coalesce(avg((rank - semrel_rank_base()) / k), 1.0)
            ELSE avg(coalesce((rank - semrel_rank_base()) / k, 1.0)) END AS delta
FROM rhos GROUP BY ALL;

-- delta(r, s) (eq. 25: the mean over words and prompts) and D(r, s) (eq. 26).
CREATE OR REPLACE TEMP VIEW semrel_d AS
WITH delta AS (
    SELECT model, is_human, relation, other, avg(delta) AS delta, count(delta) AS n
    FROM semrel_probe_delta GROUP BY ALL
)
SELECT d.model, d.is_human, d.relation, d.other, d.delta, rr.delta AS delta_rr, d.n,
       greatest(d.delta - rr.delta, 0) AS d
FROM delta d JOIN delta rr ON rr.model = d.model AND rr.relation = d.relation
                          AND rr.other = d.relation
WHERE d.other <> d.relation AND d.delta IS NOT NULL AND rr.delta IS NOT NULL;
