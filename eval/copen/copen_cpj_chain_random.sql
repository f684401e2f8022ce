-- name: copen_cpj_chain_random
-- description: >-
--   The random baseline of chain-level CPJ: a uniform true/false guess judges a chain of L
--   statements right with probability 0.5^L; the value is the mean over the chains (same
--   chain_id, two or more labelled statements; a chain of one statement is left out) of a
--   split. On the authors' 102 test chains (15, 20, 21, 17, 13, 14, 2 chains of 2..8
--   statements, counted in their stored results) this gives 8.25 %; the paper prints 7.2.
-- tasks: [binary]
-- grain: [probe, split]
-- plot: false
WITH chains AS (
    SELECT probe, split, json_extract_string(fields, '$.chain_id') AS chain_id, count(*) AS len
    FROM instances
    WHERE probe = 'copen/cpj' AND len(gold) > 0
      AND json_extract_string(fields, '$.chain_id') IS NOT NULL
    GROUP BY ALL
    HAVING count(*) >= 2
)
SELECT probe, split, avg(power(0.5, len)) AS value, count(*) AS n
FROM chains
GROUP BY ALL
ORDER BY ALL
