-- name: pararel_consistency
-- description: >-
--   ParaRel consistency (Elazar et al. 2021; the authors' analyze_results): per relation, the
--   share of (fact, graph edge) pairs whose two patterns give the fact the same answer, both
--   patterns passing the a/an filter (a pattern whose "a"/"an" before the slot does not fit the
--   gold object is skipped); and the same over the syntactic edges only (a syntactic change, no
--   lexical one), the lexical ones, those with both, and those with neither (`none`); NULL where
--   a relation has no such edge (the authors' -1). relation = 'all': the mean over relations
--   (the paper's average), `pooled` the share over every pair. Which answer: see the probe
--   (pararel/pararel: whole statements; pararel/pararel-masked: the paper's [MASK]).
-- tasks: [choice]
-- grain: [run_id, probe, split, relation]
-- requires: [_views.sql]
-- items: _pararel_consistency_items.sql
WITH r AS (
  SELECT run_id, probe, split, relation, avg(agree) AS value,
         avg(agree) FILTER (WHERE edge_type = 'syntactic') AS syntactic,
         avg(agree) FILTER (WHERE edge_type = 'lexical') AS lexical,
         avg(agree) FILTER (WHERE edge_type = 'both') AS both_changes,
         avg(agree) FILTER (WHERE edge_type = 'none') AS no_change,
         count(DISTINCT instance_id) AS n, count(*) AS pairs, avg(agree) AS pooled
  FROM pararel_pairs GROUP BY ALL)
SELECT * FROM r
UNION ALL
SELECT run_id, probe, split, 'all', avg(value), avg(syntactic), avg(lexical), avg(both_changes),
       avg(no_change), sum(n), sum(pairs), sum(pooled * pairs) / sum(pairs)
FROM r GROUP BY run_id, probe, split
ORDER BY ALL
