"""Whole-word vocabularies: the token ids of a tokenizer that are complete words on their own.

Relatum prediction and label-word scoring compare models on *words*, not sub-word pieces, so a
top-k list is restricted to tokens that stand for a whole word:

- WordPiece (BERT): a token that does not start with ``##`` and is alphabetic;
- byte-level BPE (GPT-2, RoBERTa, Llama-3, SmolLM2): a token that starts with the space marker
  ``Ġ`` and whose remaining bytes decode to an alphabetic word;
- SentencePiece (T5, Gemma, Llama-2): a token that starts with ``▁`` and is alphabetic after it.

Special tokens never count. ``lowercase=True`` keeps only lower-case words (WordNet lemmas are
lower-case). Words are plain strings, without any marker.

:meth:`WholeWordVocab.every_token` is the whole vocabulary instead (Cao et al. section 5: a
model's list "is as long as their vocabulary"): every non-special token, the lower-case whole
words as plain words and every other token (sub-word pieces, punctuation, capitalised words)
as its raw vocabulary entry in ``⟨ ⟩`` (:func:`nonword`), which no relatum can equal.

>>> vocab = WholeWordVocab([7, 3, 9], ["dog", "cat", "Paris"])
>>> vocab.words, vocab.ids
(('dog', 'cat', 'Paris'), (7, 3, 9))
>>> vocab.restrict({"cat", "Paris", "emu"}).words
('cat', 'Paris')
>>> "dog" in vocab, vocab.id_of("Paris"), len(vocab)
(True, 9, 3)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any, Literal

import torch

Family = Literal["wordpiece", "bytelevel", "sentencepiece"]

BYTELEVEL_SPACE = "Ġ"
SENTENCEPIECE_SPACE = "▁"


class WholeWordVocab:
    """An ordered set of (token id, word) pairs for one tokenizer.

    Build it with :meth:`from_tokenizer`; narrow it with :meth:`restrict` (e.g. to the words
    that every compared model has, see :func:`shared_words`).
    """

    def __init__(
        self, ids: Sequence[int], words: Sequence[str], *, tokenizer_size: int | None = None
    ) -> None:
        if len(ids) != len(words):
            raise ValueError(f"{len(ids)} ids but {len(words)} words")
        seen: dict[str, int] = {}
        for token_id, word in zip(ids, words, strict=True):
            seen.setdefault(word, int(token_id))  # a repeated word keeps its first (lowest) id
        self.words: tuple[str, ...] = tuple(seen)
        self.ids: tuple[int, ...] = tuple(seen.values())
        self.tokenizer_size = tokenizer_size
        self._index = seen
        self._tensors: dict[str, torch.Tensor] = {}

    @classmethod
    def from_tokenizer(
        cls, tokenizer: Any, *, lowercase: bool = False, min_length: int = 1
    ) -> WholeWordVocab:
        """The whole-word items of a Hugging Face tokenizer.

        >>> from tokenizers import Tokenizer, models
        >>> from transformers import PreTrainedTokenizerFast
        >>> vocab = {"[UNK]": 0, "dog": 1, "##s": 2, "Cat": 3, "3d": 4}
        >>> raw = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
        >>> tok = PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="[UNK]")
        >>> WholeWordVocab.from_tokenizer(tok).words
        ('dog', 'Cat')
        >>> WholeWordVocab.from_tokenizer(tok, lowercase=True).words
        ('dog',)
        """
        pairs = sorted((token_id, word) for token_id, _, word in _plain_tokens(tokenizer)
                       if word is not None and len(word) >= min_length
                       and not (lowercase and word != word.lower()))
        return cls(
            [i for i, _ in pairs], [w for _, w in pairs], tokenizer_size=len(tokenizer)
        )

    @classmethod
    def every_token(cls, tokenizer: Any) -> WholeWordVocab:
        """Every non-special token of a Hugging Face tokenizer: a lower-case whole word as
        itself, any other token as :func:`nonword` of its vocabulary entry.

        >>> from tokenizers import Tokenizer, models
        >>> from transformers import PreTrainedTokenizerFast
        >>> vocab = {"[UNK]": 0, "dog": 1, "##s": 2, "Cat": 3, ",": 4}
        >>> raw = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
        >>> tok = PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="[UNK]")
        >>> WholeWordVocab.every_token(tok).words
        ('dog', '⟨##s⟩', '⟨Cat⟩', '⟨,⟩')
        """
        pairs = sorted((token_id, word if word is not None and word == word.lower()
                        else nonword(token)) for token_id, token, word in _plain_tokens(tokenizer))
        return cls(
            [i for i, _ in pairs], [w for _, w in pairs], tokenizer_size=len(tokenizer)
        )

    def restrict(self, words: Iterable[str]) -> WholeWordVocab:
        """Only the items whose word is in ``words`` (order kept).

        >>> WholeWordVocab([1, 2], ["a", "b"]).restrict(["b"]).ids
        (2,)
        """
        keep = set(words)
        pairs = [(i, w) for i, w in zip(self.ids, self.words, strict=True) if w in keep]
        return WholeWordVocab(
            [i for i, _ in pairs], [w for _, w in pairs], tokenizer_size=self.tokenizer_size
        )

    def id_of(self, word: str) -> int:
        """The token id of ``word``; KeyError when it is not a whole-word item."""
        return self._index[word]

    def ids_on(self, device: torch.device | str) -> torch.Tensor:
        """The ids as a LongTensor on ``device`` (cached per device)."""
        key = str(device)
        if key not in self._tensors:
            self._tensors[key] = torch.tensor(self.ids, dtype=torch.long, device=device)
        return self._tensors[key]

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: object) -> bool:
        return word in self._index

    def __repr__(self) -> str:
        head = ", ".join(self.words[:5])
        return f"WholeWordVocab({len(self)} words: {head}{', ...' if len(self) > 5 else ''})"


def shared_words(
    tokenizers: Iterable[Any], *, lowercase: bool = False, min_length: int = 1
) -> list[str]:
    """The words that are a single whole-word token in every one of ``tokenizers`` (sorted).

    Use it to give several models the same candidate set:
    ``scorer.word_vocab().restrict(shared_words([a.tokenizer, b.tokenizer]))``.

    >>> from tokenizers import Tokenizer, models
    >>> from transformers import PreTrainedTokenizerFast
    >>> def wp(words):
    ...     vocab = {"[UNK]": 0, **{w: i + 1 for i, w in enumerate(words)}}
    ...     raw = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    ...     return PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="[UNK]")
    >>> shared_words([wp(["dog", "cat", "emu"]), wp(["cat", "dog", "##s"])])
    ['cat', 'dog']
    """
    common: set[str] | None = None
    for tokenizer in tokenizers:
        words = set(
            WholeWordVocab.from_tokenizer(tokenizer, lowercase=lowercase, min_length=min_length)
            .words
        )
        common = words if common is None else common & words
    return sorted(common or ())


def nonword(token: str) -> str:
    """How a token that is not a lower-case whole word appears in a whole-vocabulary list: its
    raw vocabulary entry in ``⟨ ⟩`` (unique per token; never equal to a word).

    >>> nonword("Ġ,"), nonword("##s")
    ('⟨Ġ,⟩', '⟨##s⟩')
    """
    return f"⟨{token}⟩"


def tokenizer_family(tokenizer: Any, vocab: Mapping[str, int] | None = None) -> Family:
    """How a tokenizer marks word starts: ``wordpiece``, ``bytelevel`` (Ġ) or ``sentencepiece`` (▁).

    >>> tokenizer_family(None, {"Ġthe": 1, "Ġa": 2, "ing": 3})
    'bytelevel'
    >>> tokenizer_family(None, {"▁the": 1, "ing": 2})
    'sentencepiece'
    """
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None and type(backend.model).__name__ == "WordPiece":
        return "wordpiece"
    vocab = vocab if vocab is not None else tokenizer.get_vocab()
    n_bytelevel = sum(1 for token in vocab if token.startswith(BYTELEVEL_SPACE))
    n_sentencepiece = sum(1 for token in vocab if token.startswith(SENTENCEPIECE_SPACE))
    if n_bytelevel == 0 and n_sentencepiece == 0:
        if any(token.startswith("##") for token in vocab):
            return "wordpiece"
        return "sentencepiece"
    return "bytelevel" if n_bytelevel > n_sentencepiece else "sentencepiece"


def token_word(token: str, family: Family) -> str | None:
    """The plain word a vocabulary entry stands for, or None when it is not a whole word.

    >>> token_word("Ġdog", "bytelevel"), token_word("dog", "bytelevel")
    ('dog', None)
    >>> token_word("ĠcafÃ©", "bytelevel")
    'café'
    >>> token_word("##s", "wordpiece"), token_word("▁Paris", "sentencepiece")
    (None, 'Paris')
    """
    if family == "wordpiece":
        word = None if token.startswith("##") else token
    elif family == "bytelevel":
        word = _bytelevel_decode(token[1:]) if token.startswith(BYTELEVEL_SPACE) else None
    else:
        word = token[1:] if token.startswith(SENTENCEPIECE_SPACE) else None
    if not word or not word.isalpha():
        return None
    return word


def _bytelevel_decode(text: str) -> str | None:
    table = _unicode_to_byte()
    try:
        return bytes(table[ch] for ch in text).decode("utf-8")
    except (KeyError, UnicodeDecodeError):
        return None


@cache
def _unicode_to_byte() -> dict[str, int]:
    """Inverse of the byte-level BPE alphabet: printable bytes stand for themselves, the other
    bytes were shifted to code points from 256 upwards, in byte order."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0xFF + 1)]
    mapping = {chr(b): b for b in printable}
    shift = 0
    for b in range(256):
        if b not in printable:
            mapping[chr(256 + shift)] = b
            shift += 1
    return mapping


def _plain_tokens(tokenizer: Any) -> list[tuple[int, str, str | None]]:
    """(id, vocabulary entry, whole word or None: :func:`token_word`) of every token of a
    Hugging Face tokenizer but its special ones."""
    vocab = tokenizer.get_vocab()
    family = tokenizer_family(tokenizer, vocab)
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    return [(token_id, token, token_word(token, family)) for token, token_id in vocab.items()
            if token_id not in special]
