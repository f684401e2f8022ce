-- name: semrel_tables
-- description: >-
--   Tables 1 and 2 of Cao et al. per relation (probe): prompts |P^r|, words |W^r| (targets of
--   the tuples, shared vocabulary), value = probes |X^r| = |P^r| x |W^r|; tuples (after
--   augmentation), source_tuples (before); before_mean / before_sd = tuple relata per target
--   (Table 2 "before expansion"), after_mean / after_sd = the limited relatum set size.
-- tasks: [relatum]
-- grain: [probe]
-- plot: false
-- requires: [_views.sql]
WITH prompts AS (
    SELECT probe, count(DISTINCT prompt_id) AS prompts FROM semrel_lists
    WHERE NOT trick GROUP BY ALL
),
before AS (
    SELECT relation, word, count(*) AS n FROM semrel_tuples GROUP BY ALL
),
after AS (
    SELECT i.relation, i.word, len(i.gold) AS n FROM semrel_instances i WHERE NOT i.trick
)
SELECT rel.probe, p.prompts, count(DISTINCT b.word) AS words,
       p.prompts * count(DISTINCT b.word) AS value,
       (SELECT count(*) FROM semrel_tuples t WHERE t.relation = rel.relation) AS tuples,
       (SELECT count(*) FROM semrel_tuples t WHERE t.relation = rel.relation AND t.source)
           AS source_tuples,
       avg(b.n) AS before_mean, stddev_samp(b.n) AS before_sd,
       (SELECT avg(a.n) FROM after a WHERE a.relation = rel.relation) AS after_mean,
       (SELECT stddev_samp(a.n) FROM after a WHERE a.relation = rel.relation) AS after_sd
FROM semrel_relations rel
LEFT JOIN prompts p USING (probe)
LEFT JOIN before b ON b.relation = rel.relation
GROUP BY rel.probe, rel.relation, p.prompts
HAVING count(b.word) > 0
ORDER BY ALL
