-- Shortcut rules: model-free rules fitted on a probe's train split only and applied to every
-- split (docs/shortcuts.md explains each rule with a worked example). Support file of
-- shortcut_panel.sql and shortcut_ceiling.sql (and eval/ontolama/ontolama_shortcuts.sql):
-- temporary views over the instances table, no model, no scores. Five of them (sc_items,
-- sc_label_predictions, sc_correct, sc_run_items, sc_chosen_rule) are temporary tables: the
-- views below read them several times, and as views DuckDB recomputed them in every reader
-- (the main job's results file: out of memory at the metrics' 4 GB limit after 20 s; as
-- tables 1.3 s and 214 MB, the same rows). They live on the metric's own cursor, which is
-- rolled back after the metric.
--
-- A rule never reads the labels of the split it is scored on: every fitted table below reads
-- gold only WHERE split = 'train', and the features of an instance (its texts, their
-- frequency in its own split, whether they occur in train) read no gold at all. On the train
-- split itself a rule is scored in-sample, except "seen in train" and the answer prior, which
-- leave the instance itself out.
--
-- The shape of a probe (sc_kind), from its instances alone:
--   choice   instances with 2+ candidates whose candidate lists differ (COPEN CSJ, CiC);
--   label    otherwise, one gold value per instance and at most 10 distinct ones (OntoLAMA's
--            1/0, COPEN CPJ's true/false): rules predict the label;
--   relatum  otherwise (semrel): a constant list of answers, scored as hits@k.
-- Only probes with a 'train' split get rules (they are fitted there).
--
-- sc_instances: the instances the rules read, the instances table itself unless a support
-- file run before this one defined it (a benchmark without a train split gives its instances
-- a split of its own there: eval/pararel/_shortcut_split.sql, a seeded split by subject).
CREATE TEMP VIEW IF NOT EXISTS sc_instances AS SELECT * FROM instances;

CREATE OR REPLACE TEMP VIEW sc_kind AS
SELECT probe,
       CASE WHEN count(DISTINCT candidates) FILTER (WHERE len(candidates) >= 2) > 1 THEN 'choice'
            WHEN max(len(gold)) = 1 AND count(DISTINCT gold[1]) <= 10 THEN 'label'
            ELSE 'relatum' END AS kind
FROM sc_instances
WHERE len(gold) > 0
GROUP BY probe
HAVING bool_or(split = 'train');

-- One row per instance with gold: its label (label probes) and its two sides. The sides are
-- the premise and hypothesis where the fields name them (sub, super: OntoLAMA), else the
-- target alone; for Complex SI also the complex concept and the named one (complex_side); for
-- a statement about a concept (COPEN CPJ: fields concept, post) the concept and the property.
CREATE OR REPLACE TEMP TABLE sc_items AS
SELECT i.probe, i.split, i.instance_id, k.kind, i.gold, i.candidates, i.target,
       i.gold[1] AS label,
       coalesce(json_extract_string(i.fields, '$.sub'), i.target) AS sub_text,
       json_extract_string(i.fields, '$.super') AS super_text,
       json_extract_string(i.fields, '$.complex_side') AS complex_side,
       json_extract_string(i.fields, '$.concept') AS concept_text,
       json_extract_string(i.fields, '$.post') AS property_text
FROM sc_instances i JOIN sc_kind k USING (probe)
WHERE len(i.gold) > 0;

-- Lower-case word tokens of a text (letters and digits).
CREATE OR REPLACE TEMP MACRO sc_tokens(t) AS
    list_filter(regexp_split_to_array(lower(coalesce(t, '')), '[^a-z0-9]+'), lambda x: x <> '');

-- The sides in long form: (instance, label, side, text), one row per side an instance has.
CREATE OR REPLACE TEMP VIEW sc_sides AS
SELECT probe, split, instance_id, label, s.side, s.text
FROM sc_items,
     LATERAL (SELECT unnest([
         {'side': 'sub', 'text': sub_text},
         {'side': 'super', 'text': super_text},
         {'side': 'complex', 'text': CASE complex_side WHEN 'premise' THEN sub_text
                                                      WHEN 'hypothesis' THEN super_text END},
         {'side': 'named', 'text': CASE complex_side WHEN 'premise' THEN super_text
                                                    WHEN 'hypothesis' THEN sub_text END},
         {'side': 'concept', 'text': concept_text},
         {'side': 'property', 'text': property_text}], recursive := true)) AS s
WHERE kind = 'label' AND s.text IS NOT NULL;

-- How often each side's text occurs in each split (no labels).
CREATE OR REPLACE TEMP VIEW sc_side_counts AS
SELECT probe, split, side, text, count(*) AS n
FROM sc_sides
GROUP BY ALL;

-- ... and in the whole dataset.
CREATE OR REPLACE TEMP VIEW sc_side_totals AS
SELECT probe, side, text, sum(n) AS n
FROM sc_side_counts
GROUP BY ALL;

-- Label probes: each rule is a key per instance; the rule predicts the label most frequent
-- among the train instances with the same key (ties: the label first in sort order), and the
-- train majority for a key that train does not have.
CREATE OR REPLACE TEMP VIEW sc_label_keys AS
SELECT probe, split, instance_id, label, 'majority' AS rule, '' AS key
FROM sc_items WHERE kind = 'label'
UNION ALL                          -- the side's own text: per-class prior from train (lookup)
SELECT probe, split, instance_id, label, 'lookup_' || side, text FROM sc_sides
UNION ALL                          -- the side's text occurs in train (train: in another one)
SELECT s.probe, s.split, s.instance_id, s.label, 'seen_in_train_' || s.side,
       (coalesce(t.n, 0) > CASE WHEN s.split = 'train' THEN 1 ELSE 0 END)::VARCHAR
FROM sc_sides s
LEFT JOIN (SELECT probe, side, text, n FROM sc_side_counts WHERE split = 'train') t
    ON t.probe = s.probe AND t.side = s.side AND t.text = s.text
UNION ALL                          -- the side's text occurs twice or more in its own split
SELECT s.probe, s.split, s.instance_id, s.label, 'frequent_in_split_' || s.side,
       (c.n >= 2)::VARCHAR
FROM sc_sides s JOIN sc_side_counts c USING (probe, split, side, text)
UNION ALL                          -- ... in the whole dataset (all splits; no labels)
SELECT s.probe, s.split, s.instance_id, s.label, 'frequent_in_dataset_' || s.side,
       (c.n >= 2)::VARCHAR
FROM sc_sides s JOIN sc_side_totals c USING (probe, side, text)
UNION ALL                          -- number of words of the side (6 = six or more)
SELECT probe, split, instance_id, label, 'length_' || side,
       least(len(sc_tokens(text)), 6)::VARCHAR
FROM sc_sides
UNION ALL                          -- pair rules: shared words (0, 1, 2+), the same last word
SELECT probe, split, instance_id, label, p.rule, p.key
FROM sc_items,
     LATERAL (SELECT unnest([
         -- the two sides share 0, 1 or 2+ words
         {'rule': 'shared_words',
          'key': least(len(list_intersect(list_distinct(sc_tokens(sub_text)),
                                          list_distinct(sc_tokens(super_text)))), 2)::VARCHAR},
         -- the sides end in the same word (the head of an English noun phrase)
         {'rule': 'head_word_match',
          'key': (sc_tokens(sub_text)[-1] = sc_tokens(super_text)[-1])::VARCHAR},
         -- which side is longer (in words): -1, 0, 1
         {'rule': 'length_difference',
          'key': sign(len(sc_tokens(sub_text)) - len(sc_tokens(super_text)))::INTEGER::VARCHAR}
         ], recursive := true)) AS p
WHERE kind = 'label' AND super_text IS NOT NULL
UNION ALL                          -- Complex SI: the side the complex concept is on
SELECT probe, split, instance_id, label, 'complex_side', complex_side
FROM sc_items WHERE kind = 'label' AND complex_side IS NOT NULL;

CREATE OR REPLACE TEMP VIEW sc_label_fit AS  -- train only
WITH counts AS (
    SELECT probe, rule, coalesce(key, '') AS key, label, count(*) AS n
    FROM sc_label_keys
    WHERE split = 'train'
    GROUP BY ALL
)
SELECT probe, rule, key, first(label ORDER BY n DESC, label) AS prediction
FROM counts
GROUP BY ALL;

CREATE OR REPLACE TEMP TABLE sc_label_predictions AS
SELECT k.probe, k.split, k.instance_id, k.rule, k.label,
       coalesce(f.prediction, m.prediction) AS prediction
FROM sc_label_keys k
LEFT JOIN sc_label_fit f ON f.probe = k.probe AND f.rule = k.rule AND f.key = coalesce(k.key, '')
JOIN (SELECT probe, prediction FROM sc_label_fit WHERE rule = 'majority') m
    ON m.probe = k.probe;

CREATE OR REPLACE TEMP VIEW sc_label_correct AS
SELECT probe, split, instance_id, rule, 'accuracy' AS measure,
       (prediction = label)::DOUBLE AS correct
FROM sc_label_predictions;

-- Multiple choice: each rule scores every candidate; it picks the best (ties: at random, so an
-- instance counts the share of gold among the tied best), the highest or the lowest score,
-- whichever is more accurate on train.
CREATE OR REPLACE TEMP VIEW sc_candidates AS
SELECT probe, split, instance_id, target, gold, candidates,
       unnest(list_distinct(candidates)) AS candidate
FROM sc_items WHERE kind = 'choice';

CREATE OR REPLACE TEMP VIEW sc_choice_scores AS
WITH train_answers AS (           -- how often a candidate was offered / was the answer in train
    SELECT probe, candidate, count(*) AS offered,
           sum(list_contains(gold, candidate)::INTEGER) AS answer
    FROM sc_candidates WHERE split = 'train'
    GROUP BY ALL
),
offered AS (                      -- how often a candidate is offered in the whole dataset
    SELECT probe, candidate, count(*) AS n FROM sc_candidates GROUP BY ALL
)
SELECT c.probe, c.split, c.instance_id, c.candidate, list_contains(c.gold, c.candidate) AS gold,
       r.rule, r.score
FROM sc_candidates c
LEFT JOIN train_answers t USING (probe, candidate)
JOIN offered o USING (probe, candidate),
LATERAL (
    SELECT * FROM (VALUES
        -- the answer rate in train (train: without the instance itself)
        ('answer_prior', CASE WHEN c.split = 'train'
            THEN (coalesce(t.answer, 0) - list_contains(c.gold, c.candidate)::INTEGER)
                 / greatest(coalesce(t.offered, 0) - 1, 1)
            ELSE coalesce(t.answer, 0) / greatest(coalesce(t.offered, 0), 1) END),
        ('candidate_frequency', o.n::DOUBLE),
        ('candidate_length', len(sc_tokens(c.candidate))::DOUBLE),
        ('candidate_characters', length(c.candidate)::DOUBLE),
        ('shared_words', len(list_intersect(list_distinct(sc_tokens(c.target)),
                                            list_distinct(sc_tokens(c.candidate))))::DOUBLE),
        ('head_word_match', (sc_tokens(c.target)[-1] = sc_tokens(c.candidate)[-1])::DOUBLE),
        -- where the candidate stands in the instance's list (1 = first)
        ('candidate_position', list_position(c.candidates, c.candidate)::DOUBLE)
    ) AS v(rule, score)
) r;

CREATE OR REPLACE TEMP VIEW sc_choice_directed AS
WITH directed AS (
    SELECT s.*, d.direction, d.direction * coalesce(s.score, 0) AS signed
    FROM sc_choice_scores s, (VALUES (1), (-1)) AS d(direction)
),
best AS (
    SELECT *, max(signed) OVER (PARTITION BY probe, split, instance_id, rule, direction) AS top
    FROM directed
)
SELECT probe, split, instance_id, rule, direction,
       count(*) FILTER (WHERE gold AND signed = top) / count(*) FILTER (WHERE signed = top)
           AS correct
FROM best
GROUP BY ALL;

CREATE OR REPLACE TEMP VIEW sc_choice_fit AS  -- train only: the better direction (ties: 1)
SELECT probe, rule, first(direction ORDER BY acc DESC, direction DESC) AS direction
FROM (SELECT probe, rule, direction, avg(correct) AS acc
      FROM sc_choice_directed WHERE split = 'train' GROUP BY ALL)
GROUP BY ALL;

-- Relatum: the k most frequent gold answers of train (ties: alphabetical), the same list for
-- every instance; hits@k = some gold answer is in it.
CREATE OR REPLACE TEMP VIEW sc_relatum_top AS
SELECT probe, answer, row_number() OVER (PARTITION BY probe ORDER BY n DESC, answer) AS rank
FROM (SELECT probe, answer, count(*) AS n
      FROM (SELECT probe, unnest(list_distinct(gold)) AS answer
            FROM sc_items WHERE kind = 'relatum' AND split = 'train')
      GROUP BY ALL);

-- Every rule's correctness per instance: 1 / 0 (label, relatum), the expected share (choice).
-- measure: accuracy (comparable with the model's accuracy or precision at 1) or hits@10.
CREATE OR REPLACE TEMP TABLE sc_correct AS
SELECT probe, split, instance_id, rule, measure, correct FROM sc_label_correct
UNION ALL
SELECT d.probe, d.split, d.instance_id, d.rule, 'accuracy', d.correct
FROM sc_choice_directed d JOIN sc_choice_fit f USING (probe, rule, direction)
UNION ALL
SELECT i.probe, i.split, i.instance_id, 'train_top_answers@' || k.k,
       CASE k.k WHEN 1 THEN 'accuracy' ELSE 'hits@' || k.k END,
       coalesce(max(list_contains(i.gold, t.answer)::INTEGER), 0)::DOUBLE
FROM sc_items i CROSS JOIN (VALUES (1), (10)) AS k(k)
LEFT JOIN sc_relatum_top t ON t.probe = i.probe AND t.rank <= k.k
WHERE i.kind = 'relatum'
GROUP BY ALL;

-- The panel: each rule's value per (probe, split) over the split's instances with gold.
CREATE OR REPLACE TEMP VIEW sc_panel AS
SELECT probe, split, rule, any_value(measure) AS measure, avg(correct) AS value,
       count(*) AS n
FROM sc_correct
GROUP BY probe, split, rule;

-- The rule the ceiling reports, chosen without the labels it is scored on: per probe, the rule
-- most accurate on its 'dev' split when that has labelled instances, else on 'train' (there
-- in-sample: the lookups find their own labels, so they are favoured), ties by the rule name.
-- Its accuracy on another split is an estimate of what a model-free rule reaches there; the best
-- rule on the scored split itself (best_value below) is chosen on that split's labels and is
-- biased upward (on a small split it reaches well above chance by chance: sc_run_null).
CREATE OR REPLACE TEMP TABLE sc_chosen_rule AS
WITH selection AS (
    SELECT probe, CASE WHEN bool_or(split = 'dev') THEN 'dev' ELSE 'train' END AS chosen_on
    FROM sc_panel
    WHERE measure = 'accuracy' AND split IN ('dev', 'train')
    GROUP BY probe
)
SELECT p.probe, s.chosen_on, first(p.rule ORDER BY p.value DESC, p.rule) AS rule,
       max(p.value) AS chosen_value
FROM sc_panel p JOIN selection s ON p.probe = s.probe AND p.split = s.chosen_on
WHERE p.measure = 'accuracy'
GROUP BY ALL;

-- The instances each finished run scored.
CREATE OR REPLACE TEMP TABLE sc_run_items AS
SELECT DISTINCT s.run_id, s.probe, s.split, s.instance_id
FROM scores s JOIN runs r USING (run_id)
WHERE r.status = 'done'
UNION
SELECT DISTINCT s.run_id, s.probe, s.split, s.instance_id
FROM responses s JOIN runs r USING (run_id)
WHERE r.status = 'done';

-- The shortcut ceiling of each finished run, on the instances it scored (accuracy; relatum:
-- hits@1, precision at 1): value = the accuracy of the rule chosen on dev or train
-- (sc_chosen_rule; rule, chosen_on); best_value, best_rule = the best rule on these instances
-- themselves (ties: the rule name first in sort order), chosen on their labels.
CREATE OR REPLACE TEMP VIEW sc_run_ceiling AS
WITH per_rule AS (
    SELECT s.run_id, s.probe, s.split, c.rule, avg(c.correct) AS value, count(*) AS n
    FROM sc_run_items s JOIN sc_correct c USING (probe, split, instance_id)
    WHERE c.measure = 'accuracy'
    GROUP BY ALL
),
best AS (
    SELECT run_id, probe, split, max(value) AS best_value,
           first(rule ORDER BY value DESC, rule) AS best_rule, max(n) AS n
    FROM per_rule
    GROUP BY ALL
)
SELECT b.run_id, b.probe, b.split, p.value, c.rule, c.chosen_on, b.n, b.best_value, b.best_rule
FROM best b
JOIN sc_chosen_rule c USING (probe)
LEFT JOIN per_rule p ON p.run_id = b.run_id AND p.probe = b.probe AND p.split = b.split
                    AND p.rule = c.rule;

-- The permutation null of best_value (label probes): the run's labels shuffled among its
-- instances 200 times (permutation k orders the instances by md5(instance_id:k:42), a fixed
-- seed, and hands them the labels in instance-id order), every rule's accuracy against the
-- shuffled labels (its predictions do not read these labels), the best rule of each shuffle;
-- null_median and null_p95 are the median and 95th percentile of those 200 bests. A best_value
-- at or under null_p95 cannot be told apart from a rule matching labels by chance.
CREATE OR REPLACE TEMP VIEW sc_run_null AS
WITH items AS (
    SELECT s.run_id, s.probe, s.split, s.instance_id, i.label,
           row_number() OVER (PARTITION BY s.run_id, s.probe, s.split
                              ORDER BY s.instance_id) AS pos
    FROM sc_run_items s JOIN sc_items i USING (probe, split, instance_id)
    WHERE i.kind = 'label'
),
shuffled AS (
    SELECT it.run_id, it.probe, it.split, k.perm, it.label,
           row_number() OVER (PARTITION BY it.run_id, it.probe, it.split, k.perm
                              ORDER BY md5(it.instance_id || ':' || k.perm::VARCHAR || ':42'),
                                       it.instance_id) AS pos
    FROM items it CROSS JOIN range(1, 201) AS k(perm)
),
per_rule AS (
    SELECT it.run_id, it.probe, it.split, sh.perm, p.rule,
           avg((p.prediction = sh.label)::DOUBLE) AS value
    FROM items it
    JOIN shuffled sh USING (run_id, probe, split, pos)
    JOIN sc_label_predictions p USING (probe, split, instance_id)
    GROUP BY ALL
),
best AS (
    SELECT run_id, probe, split, perm, max(value) AS value FROM per_rule GROUP BY ALL
)
SELECT run_id, probe, split, quantile_cont(value, 0.5) AS null_median,
       quantile_cont(value, 0.95) AS null_p95, count(*) AS null_shuffles
FROM best
GROUP BY ALL;
