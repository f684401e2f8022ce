-- ParaRel's shortcut split (support file of pararel_shortcut_panel and
-- pararel_shortcut_ceiling; docs/pararel.md, "The shortcut panel"). ParaRel, like LAMA, has
-- test facts only, and the shortcut rules (eval/metrics/_shortcuts.sql, docs/shortcuts.md) are
-- fitted on a train split. This file gives each exported ParaRel fact a split of its own, the
-- one kgprobe's probing probe files use (queries/probing/bear-truth.rq): by the first hex digit
-- of MD5(subject label || '|42'), train 0-9 (10/16), dev a-c (3/16), test d-f (3/16). The
-- split reads the subject only, so a subject's facts (in every relation) are in one part and
-- no rule fitted on train has seen a test subject; it reads no label. Run before
-- ../metrics/_shortcuts.sql, which then reads these instances (its sc_instances) instead of
-- the instances table: the real split of every ParaRel fact is 'test', so a run's scores
-- join the facts of the held-out 'test' part only (the ceiling's instances).
CREATE OR REPLACE TEMP VIEW sc_instances AS
SELECT * REPLACE (
         CASE WHEN left(md5(coalesce(target, '') || '|42'), 1) < 'a' THEN 'train'
              WHEN left(md5(coalesce(target, '') || '|42'), 1) < 'd' THEN 'dev'
              ELSE 'test' END AS split)
FROM instances
WHERE probe LIKE 'pararel/%';
