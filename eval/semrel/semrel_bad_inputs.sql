-- name: semrel_bad_inputs
-- description: >-
--   Counts of questionable inputs (value; n = how many were checked), never a failure. kind
--   target_not_in_vocab: instances of the probe whose target word is not in the model's
--   model_vocab (models with a vocabulary); model_without_vocab: a compared model without
--   model_vocab rows (it does not limit the shared vocabulary; probe '(all)'); empty_set:
--   instances whose limited relatum set is empty (model '(all)', as semrel_empty_sets);
--   multi_word_answer: human answers (human_responses rows) with more than one word;
--   not_in_any_vocab: human answers in no model's vocabulary (possible typos; only when
--   model_vocab has rows); list_shorter_than_set: a model's lists (relation probes) shorter
--   than the probe's limited relatum set, so completeness's and distinguishability's k =
--   |Y^r(w)| (eqs. 13, 24) is cut to the list length (run the probes with top_k_gold: true).
--   Shared views: eval/semrel/_views.sql.
-- tasks: [relatum]
-- grain: [model, probe, kind]
-- plot: false
-- requires: [_views.sql]
WITH models AS (
    SELECT DISTINCT model, probe FROM semrel_runs WHERE NOT is_human
),
vocab AS (
    SELECT DISTINCT model, lower(word) AS word FROM model_vocab
),
answers AS (
    SELECT h.probe, lower(trim(h.response)) AS response
    FROM human_responses h JOIN semrel_relations USING (probe)
)
SELECT m.model, m.probe, 'target_not_in_vocab' AS kind,
       count(*) FILTER (WHERE v.word IS NULL) AS value, count(*) AS n
FROM models m
JOIN semrel_instances i USING (probe)
LEFT JOIN vocab v ON v.model = m.model AND v.word = i.word
WHERE m.model IN (SELECT model FROM semrel_vocab_models)
GROUP BY ALL
UNION ALL
SELECT DISTINCT model, '(all)', 'model_without_vocab', 1, 1
FROM models WHERE model NOT IN (SELECT model FROM semrel_vocab_models)
UNION ALL
SELECT '(all)', probe, 'empty_set', count(*) FILTER (WHERE len(gold) = 0), count(*)
FROM semrel_instances GROUP BY ALL
UNION ALL
SELECT model, probe, 'list_shorter_than_set', count(*) FILTER (WHERE len(answers) < len(gold)),
       count(*)
FROM semrel_probes WHERE NOT is_human AND len(gold) > 0 GROUP BY ALL
UNION ALL
SELECT 'human', probe, 'multi_word_answer', count(*) FILTER (WHERE response LIKE '% %'),
       count(*)
FROM answers GROUP BY ALL
UNION ALL
SELECT 'human', probe, 'not_in_any_vocab',
       count(*) FILTER (WHERE response NOT IN (SELECT word FROM vocab)), count(*)
FROM answers WHERE EXISTS (SELECT 1 FROM model_vocab) GROUP BY ALL
ORDER BY ALL
