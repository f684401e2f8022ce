-- name: semrel_oor
-- description: >-
--   Out-of-relatum statistics (Cao et al. section 6.1, section 8): a word is OOR for a probe
--   when it is in none of the six relatum sets of the probe's word. Humans: the answer tokens
--   (human_responses); models: the words of the top 10 of each list. tokens, types (distinct
--   words), oor_tokens, oor_types (types OOR wherever they occur), value = the OOR token
--   share, oor_type_share, all_oor = the share of lists (probes) made only of OOR words (top
--   10 for models), first_rank = the mean rank of the first non-OOR word in the ranked list
--   (lists with one). Humans also: file_tokens, file_types = every loaded answer of the
--   response file (all answered words and Appendix A prompts, no vocabulary limit: section
--   6.1's 93,120 tokens, 7,216 types).
-- tasks: [relatum]
-- grain: [model]
-- plot: false
-- requires: [_views.sql]
WITH related AS (SELECT DISTINCT word, relatum FROM semrel_sets),
file_answers AS (
    SELECT lower(trim(h.response)) AS response
    FROM human_responses h JOIN semrel_relations USING (probe)
    WHERE trim(h.response) <> ''
),
human_tok AS (
    SELECT 'human' AS model, t.probe, t.instance_id, t.prompt_id, t.response AS token,
           r.relatum IS NULL AS oor
    FROM semrel_human_tokens t LEFT JOIN related r ON r.word = t.word AND r.relatum = t.response
),
model_tok AS (
    SELECT l.model, l.probe, l.instance_id, l.prompt_id, a.token, r.relatum IS NULL AS oor
    FROM semrel_probes l
    CROSS JOIN LATERAL (SELECT unnest(l.answers[1:10]) AS token) a
    LEFT JOIN related r ON r.word = l.word AND r.relatum = a.token
    WHERE NOT l.is_human
),
tok AS (SELECT * FROM human_tok UNION ALL SELECT * FROM model_tok),
per_list AS (
    SELECT model, probe, instance_id, prompt_id, bool_and(oor) AS all_oor FROM tok GROUP BY ALL
),
types AS (SELECT model, token, bool_and(oor) AS oor FROM tok GROUP BY ALL),
first_rank AS (
    SELECT l.model, min(list_position(l.answers, r.relatum)) AS rank
    FROM semrel_probes l JOIN related r ON r.word = l.word
    GROUP BY l.model, l.probe, l.instance_id, l.prompt_id
)
SELECT t.model, avg(t.oor::INTEGER) AS value, count(*) AS tokens,
       count(*) FILTER (WHERE t.oor) AS oor_tokens,
       (SELECT count(*) FROM types y WHERE y.model = t.model) AS types,
       (SELECT count(*) FROM types y WHERE y.model = t.model AND y.oor) AS oor_types,
       (SELECT avg(y.oor::INTEGER) FROM types y WHERE y.model = t.model) AS oor_type_share,
       (SELECT avg(p.all_oor::INTEGER) FROM per_list p WHERE p.model = t.model) AS all_oor,
       (SELECT count(*) FILTER (WHERE p.all_oor) FROM per_list p WHERE p.model = t.model)
           AS all_oor_lists,
       (SELECT count(*) FROM per_list p WHERE p.model = t.model) AS lists,
       (SELECT avg(f.rank) FROM first_rank f WHERE f.model = t.model AND f.rank IS NOT NULL)
           AS first_rank,
       CASE WHEN t.model = 'human' THEN (SELECT count(*) FROM file_answers) END AS file_tokens,
       CASE WHEN t.model = 'human' THEN (SELECT count(DISTINCT response) FROM file_answers)
       END AS file_types
FROM tok t GROUP BY t.model ORDER BY ALL
