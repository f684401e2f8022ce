-- name: semrel_proto_probes
-- description: >-
--   The number of prototypicality probes per relation (section 6.2; paper 4,331 with its
--   16-model vocabulary: HYP 2,406, HOL 805, ANT 448, SYN 672).
-- tasks: [relatum]
-- grain: [probe]
-- plot: false
-- requires: [_views.sql, _prototypicality.sql]
SELECT probe, count(*) AS value FROM semrel_proto_probes GROUP BY ALL
UNION ALL
SELECT 'all', count(*) FROM semrel_proto_probes HAVING count(*) > 0
ORDER BY ALL
