-- name: ontolama_majority_baseline
-- description: >-
--   OntoLAMA majority-class baseline: the accuracy of always answering the more frequent gold
--   class (value), over the instances a run scored (the whole split, or the first N by instance
--   id of a --limit run), and the share of positives (positive_share, gold "1"), which shows
--   whether a sample keeps the class balance. Only finished subsumption runs (zero-shot and
--   K-shot).
-- tasks: [subsumption]
-- grain: [run_id, probe, split]
WITH scored AS (                  -- the instances each run scored
    SELECT DISTINCT s.run_id, s.probe, s.split, s.instance_id
    FROM scores s JOIN runs r USING (run_id)
    WHERE r.task = 'subsumption' AND r.status = 'done'
),
gold AS (
    SELECT s.run_id, s.probe, s.split, i.gold[1] AS label
    FROM scored s JOIN instances i USING (probe, split, instance_id)
    WHERE len(i.gold) > 0
)
SELECT run_id, probe, split,
       greatest(avg(CASE WHEN label = '1' THEN 1.0 ELSE 0.0 END),
                avg(CASE WHEN label = '1' THEN 0.0 ELSE 1.0 END)) AS value,
       avg(CASE WHEN label = '1' THEN 1.0 ELSE 0.0 END) AS positive_share,
       count(*) AS n
FROM gold
GROUP BY ALL
ORDER BY ALL
