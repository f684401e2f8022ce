"""The names of the backends' scoring options (a light module: no torch), shared by the
backends and ``--model-args`` (:mod:`probes.engine.model_args`).

>>> PLL_METRICS[:2], BOUNDARIES[0]
(('original', 'within_word_l2r'), 'lm-eval')
"""

PLL_METRICS = ("original", "within_word_l2r", "sentence_l2r", "answer_l2r+word_l2r")
"""Masked LMs, ``pll_metric``: which tokens each scored token's pseudo-log-likelihood copy
masks (lm-pub-quiz 0.3.3's names, its ``MaskedLMScoringMixin.create_masked_batch``):

- ``original`` (Salazar et al. 2020; kgprobe's default): the token alone;
- ``within_word_l2r`` (Kauf and Ivanova 2023; lm-pub-quiz's default): the token and the scored
  tokens right of it in the same word (the fast tokenizer's ``word_ids``);
- ``sentence_l2r``: the token and every token right of it to the end of the text (the final
  ``[SEP]`` included);
- ``answer_l2r+word_l2r``: a token of the answer masks itself and the answer's tokens right of
  it; any other token is masked as by ``within_word_l2r``. The answer is the third element of
  a ``pll`` request, ``(text, span, answer_span)``.
"""

BOUNDARIES = ("lm-eval", "whole", "lm-pub-quiz")
"""Causal LMs, ``boundary``: ``lm-eval`` (default): context and continuation tokenised apart,
the continuation's tokens scored (lm-evaluation-harness); ``whole`` and ``lm-pub-quiz``: one
statement with BOS, scored from the continuation's first token (lm-pub-quiz 0.3.3),
``lm-pub-quiz`` with the BOS-text quirk of its conditional score
(:mod:`probes.backends.causal_statements`)."""
