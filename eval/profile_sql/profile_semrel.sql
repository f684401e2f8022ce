-- name: profile_semrel
-- description: >-
--   Knowledge profile, semantic relations (Cao et al. 2025): per agent, relation and word, the
--   word's soundness S (eq. 11: the share of its prompts whose top answer is in its relatum
--   set), read from the semrel views with no shared-vocabulary limit. Human rows only for the
--   words some model answered, so the human value is the ceiling on the same sample.
-- tasks: [relatum]
-- grain: [model, relation, word]
-- requires: [../semrel/_views.sql]
-- plot: false
SELECT w.model, w.is_human, w.relation, w.word, w.s AS value, w.prompts AS n
FROM semrel_word_sc w
WHERE NOT w.is_human OR EXISTS (
    SELECT 1 FROM semrel_word_sc m
    WHERE NOT m.is_human AND m.relation = w.relation AND m.word = w.word)
ORDER BY ALL
