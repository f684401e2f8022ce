-- name: semrel_constant_answer
-- description: >-
--   The constant-answer baseline per relation (issue 23; the paper reports none): for each word
--   w of W^r with a non-empty relatum set, the answer list is the relata of the OTHER words of
--   W^r ranked by how many of their sets hold them (ties alphabetical), fitted leave-one-out so
--   that w's own gold is never read; a relatum only w's set holds is not in the list. value =
--   soundness S of the list (its top answer is in Y^r(w), eq. 11; one list per word, so the
--   mean over prompts is that 0 or 1), averaged over the words as S is (eq. 12); c =
--   completeness (Recall@k of the list, k = min(|Y^r(w)|, list length), eq. 13; 0 for an empty
--   list); hits10 = one of the top 10 is in Y^r(w); top = the most frequent relatum over all of
--   W^r (the list's usual head; ties alphabetical); n = words. Extra rows: probe 'macro' = the
--   mean over relations (n = relations), 'micro' = the mean over all per-word scores. Needs no
--   run: it reads the relation probes' instances only (semrel_instances).
-- tasks: [relatum]
-- grain: [probe]
-- plot: false
-- requires: [_views.sql]
WITH sets AS (
    SELECT DISTINCT probe, word, unnest(gold) AS relatum
    FROM semrel_instances WHERE NOT trick
),
words AS (
    SELECT probe, word, count(*) AS size FROM sets GROUP BY ALL
),
freq AS (
    SELECT probe, relatum, count(*) AS n FROM sets GROUP BY ALL
),
-- How many OTHER words' sets hold each relatum: the count over W^r less w's own set.
loo AS (
    SELECT w.probe, w.word, f.relatum,
           f.n - (s.relatum IS NOT NULL)::INTEGER AS n
    FROM words w
    JOIN freq f USING (probe)
    LEFT JOIN sets s ON s.probe = w.probe AND s.word = w.word AND s.relatum = f.relatum
),
ranked AS (
    SELECT probe, word, relatum,
           row_number() OVER (PARTITION BY probe, word ORDER BY n DESC, relatum) AS rank
    FROM loo WHERE n > 0
),
lists AS (
    SELECT w.probe, w.word, w.size, count(r.relatum) AS length,
           count(*) FILTER (WHERE r.rank = 1 AND s.relatum IS NOT NULL) AS s_hit,
           count(*) FILTER (WHERE r.rank <= 10 AND s.relatum IS NOT NULL) AS top10_hits,
           count(*) FILTER (WHERE r.rank <= w.size AND s.relatum IS NOT NULL) AS topk_hits
    FROM words w
    LEFT JOIN ranked r ON r.probe = w.probe AND r.word = w.word
    LEFT JOIN sets s ON s.probe = r.probe AND s.word = r.word AND s.relatum = r.relatum
    GROUP BY ALL
),
per_word AS (
    SELECT probe, word, s_hit::DOUBLE AS s, (top10_hits > 0)::INTEGER::DOUBLE AS hits10,
           CASE WHEN length = 0 THEN 0.0 ELSE topk_hits / least(size, length) END AS c
    FROM lists
),
tops AS (
    SELECT probe, arg_min(relatum, (-n, relatum)) AS top FROM freq GROUP BY ALL
),
per_relation AS (
    SELECT probe, avg(s) AS value, avg(c) AS c, avg(hits10) AS hits10, count(*) AS n
    FROM per_word GROUP BY ALL
)
SELECT p.probe, p.value, p.c, p.hits10, t.top, p.n
FROM per_relation p JOIN tops t USING (probe)
UNION ALL
SELECT 'macro', avg(value), avg(c), avg(hits10), NULL, count(*) FROM per_relation
HAVING count(*) > 0
UNION ALL
SELECT 'micro', avg(s), avg(c), avg(hits10), NULL, count(*) FROM per_word
HAVING count(*) > 0
ORDER BY ALL
