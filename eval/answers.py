"""Matching a generated answer against its accepted forms: the rules of docs/generate.md.

Written from the definitions of the SQuAD v1.1 evaluation script (Rajpurkar et al. 2016),
which lm-evaluation-harness's SQuAD-style tasks reuse; :mod:`eval.udf` registers them as
DuckDB functions for the metric files (``eval/metrics/generate_*.sql``).

- :func:`normalize_answer`: lower case; every ASCII punctuation character
  (``string.punctuation``) removed; the words ``a``, ``an``, ``the`` removed; white space
  collapsed to single spaces and trimmed. In that order, as SQuAD.
- exact match: the normalised answer equals a normalised accepted form;
- :func:`contains_answer`: a normalised accepted form occurs in the normalised answer as
  whole words ("paris" in "it is paris france", not "cat" in "category");
- :func:`token_f1`: SQuAD's token F1 between the normalised answer's and a form's words
  (bags of words: precision, recall, their harmonic mean; 0 without a common word);
- :func:`not_attempted`: the answer holds no accepted form and is empty or says it does not
  know / will not answer (the phrases of :data:`REFUSALS`, after normalisation): SimpleQA's
  "not attempted" outcome, decided by a fixed rule instead of a grader model.

>>> normalize_answer("  The Eiffel-Tower!  ")
'eiffeltower'
>>> normalize_answer("An apple, a day")
'apple day'
>>> contains_answer("It is Paris, France.", "paris"), contains_answer("category", "cat")
(True, False)
>>> token_f1("the big red dog", "red dog")
0.8
>>> not_attempted("I don't know.", ["Paris"]), not_attempted("Paris? I'm not sure", ["Paris"])
(True, False)
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")

REFUSALS = (
    "i dont know", "i do not know", "dont know", "do not know", "i am not sure", "im not sure",
    "not sure", "no idea", "i have no idea", "i cannot", "i cant", "i can not", "i am unable",
    "im unable", "unable to", "i dont have", "i do not have", "unknown", "not known",
    "cannot be determined", "i wont", "i will not", "as an ai", "sorry",
)
"""Phrases (normalised: no apostrophes) whose presence in an answer without any accepted
form makes it "not attempted"."""


def normalize_answer(text: str | None) -> str | None:
    """SQuAD's normalisation (see the module); None stays None."""
    if text is None:
        return None
    lowered = text.lower()
    no_punct = "".join(ch for ch in lowered if ch not in _PUNCTUATION)
    no_articles = _ARTICLES.sub(" ", no_punct)
    return " ".join(no_articles.split())


def contains_answer(answer: str | None, form: str | None) -> bool | None:
    """Whether the normalised ``form`` occurs in the normalised ``answer`` as whole words (an
    empty form is never contained)."""
    a, f = normalize_answer(answer), normalize_answer(form)
    if a is None or f is None:
        return None
    return bool(f) and f" {f} " in f" {a} "


def token_f1(answer: str | None, form: str | None) -> float | None:
    """SQuAD's token F1 of the normalised answer against the normalised form."""
    a, f = normalize_answer(answer), normalize_answer(form)
    if a is None or f is None:
        return None
    pred, gold = a.split(), f.split()
    common = sum((Counter(pred) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def not_attempted(answer: str | None, forms: Sequence[str] | None) -> bool | None:
    """SimpleQA's "not attempted", by rule: no accepted form is contained in the answer, and
    the answer is empty after normalisation or holds one of :data:`REFUSALS` as whole words."""
    a = normalize_answer(answer)
    if a is None:
        return None
    if any(contains_answer(answer, f) for f in forms or ()):
        return False
    return not a or any(f" {r} " in f" {a} " for r in REFUSALS)
