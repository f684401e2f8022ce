-- name: semrel_tables
-- description: >-
--   Tables 1 and 2 of Cao et al. per relation (probe): prompts |P^r|, words |W^r| (semrel_targets:
--   by default the words the annotators answered, shared vocabulary; answered = of them, those
--   with a human answer loaded), value = probes |X^r| = |P^r| x |W^r|; tuples (after
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
SELECT rel.probe, p.prompts,
       (SELECT count(*) FROM semrel_instances i WHERE i.relation = rel.relation AND NOT i.trick)
           AS words,
       p.prompts * (SELECT count(*) FROM semrel_instances i
                    WHERE i.relation = rel.relation AND NOT i.trick) AS value,
       (SELECT count(DISTINCT i.word) FROM semrel_instances i
        JOIN human_responses h ON h.probe = i.probe AND h.instance_id = i.instance_id
        WHERE i.relation = rel.relation AND NOT i.trick) AS answered,
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
HAVING words > 0
ORDER BY ALL
