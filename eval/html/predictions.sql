-- The predictions the HTML report's instance browser shows (eval.html_data): one row per
-- finished run, instance and prompt. Not a metric (it reports no number); kgprobe's own query,
-- run read-only over the results file.
-- Scored runs (choice, binary, subsumption, ...): every scored candidate with its score
-- (log-probability) and rank under that prompt (1 = best; equal scores share a rank); the
-- model's answer is the label (the class of a binary label word; the candidate itself for
-- choice) of the best-scoring candidate, the prompt shown is the text scored for it, and the
-- prediction is right when the best candidate of a gold label scores strictly higher than every
-- other candidate (a tie is wrong; labels compared case-insensitively), as choice_accuracy and
-- binary_accuracy count an instance under one prompt.
-- Relatum runs: the ranked responses (top-k tokens with their probability); the answer is the
-- rank-1 token, right when it is a gold answer or a gold form (gold_forms), compared
-- case-insensitively.
WITH scored AS (
    SELECT s.run_id, s.probe, s.split, s.instance_id, s.prompt_id, s.candidate, s.score,
           s.prompt, lower(coalesce(s.label, s.candidate)) AS label,
           list_contains(list_transform(i.gold, lambda g: lower(g)),
                         lower(coalesce(s.label, s.candidate))) AS is_gold
    FROM scores s
    JOIN runs r ON r.run_id = s.run_id
    JOIN instances i ON i.probe = s.probe AND i.split = s.split AND i.instance_id = s.instance_id
    WHERE r.status = 'done'
),
ranked AS (
    SELECT *, rank() OVER (PARTITION BY run_id, probe, split, instance_id, prompt_id
                           ORDER BY score DESC NULLS LAST) AS rank
    FROM scored
),
by_prompt AS (
    SELECT run_id, probe, split, instance_id, prompt_id,
           list(candidate ORDER BY rank, candidate) AS candidates,
           list(score ORDER BY rank, candidate) AS scores,
           list(rank ORDER BY rank, candidate) AS ranks,
           arg_max(coalesce(label, candidate), score) AS answer,
           arg_max(prompt, score) AS prompt,
           coalesce(max(score) FILTER (WHERE is_gold)
                    > coalesce(max(score) FILTER (WHERE NOT is_gold), '-inf'::DOUBLE), false)
               AS is_right
    FROM ranked
    GROUP BY ALL
),
responded AS (
    SELECT p.run_id, p.probe, p.split, p.instance_id, p.prompt_id,
           list(p.token ORDER BY p.rank) AS candidates,
           list(p.probability ORDER BY p.rank) AS scores,
           list(p.rank ORDER BY p.rank) AS ranks,
           min_by(p.token, p.rank) AS answer,
           min_by(p.prompt, p.rank) AS prompt
    FROM responses p JOIN runs r ON r.run_id = p.run_id
    WHERE r.status = 'done' AND p.rank <= 10
    GROUP BY ALL
)
SELECT * FROM by_prompt
UNION ALL BY NAME
SELECT r.*, (list_contains(list_transform(i.gold, lambda g: lower(g)), lower(r.answer))
             OR EXISTS (SELECT 1 FROM gold_forms f WHERE f.probe = r.probe
                        AND f.split = r.split AND f.instance_id = r.instance_id
                        AND lower(f.form) = lower(r.answer))) AS is_right
FROM responded r JOIN instances i USING (probe, split, instance_id)
