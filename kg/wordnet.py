"""Load WordNet 3.0 (the Princeton database files) into the ``wordnet`` graph.

The loader reads ``data.noun``, ``data.verb``, ``data.adj``, ``data.adv`` (format: wndb(5WN))
and ``index.sense`` (senseidx(5WN)) directly, writes N-Triples text and bulk-loads it (as fast
in the store as ``bulk_extend`` with pyoxigraph terms, without building 2.8 million Python term
objects first).

Resources (``wnd:`` = ``https://w3id.org/kgprobe/data/wordnet/``, ``wn:`` = the W3C WordNet
RDF schema):

- synset ``wnd:synset-02084071-n`` (8-digit offset, POS letter ``n v a s r``): ``wn:Synset``
  and ``wn:NounSynset`` etc., ``wn:synsetId``, ``wn:gloss``, ``rdfs:label`` (first lemma, as
  written), ``kgp:lexicalDomain`` (``"noun.animal"``);
- word ``wnd:word-domestic_dog`` (one per lower-case lemma, across POS): ``wn:Word``
  (+ ``wn:Collocation``), ``wn:lexicalForm``;
- word sense ``wnd:wordsense-dog-n-1`` (sense number from ``index.sense``): ``wn:WordSense``
  and ``wn:NounWordSense`` etc., ``wn:word``, ``kgp:senseNumber``, ``wn:tagCount``,
  ``rdfs:label`` (the lemma as written in the synset); the synset ``wn:containsWordSense`` it;
- satellites (``s``) are typed as adjective synsets / senses too (a subclass in the W3C schema);
- pointers (see ``POINTERS``) between synsets (semantic) or word senses (lexical), each
  relation stored once, in the direction of its predicate;
- irregular verb forms (``verb.exc``, when the manifest lists it) ``wnd:verbform-had``:
  ``kgp:VerbForm``, ``kgp:inflectedForm "had"``, ``kgp:baseForm "have"`` (one per base form
  given, spaces for underscores; not ``wn:lexicalForm``, which only lemmas have).
  :mod:`kg.lexicon` reads them;
- the other exception lists of morphy(7WN) likewise, when the manifest lists them:
  ``noun.exc`` (``wnd:nounform-feet``, ``kgp:NounForm``: "feet" -> "foot"), ``adj.exc``
  (``wnd:adjectiveform-better``, ``kgp:AdjectiveForm``) and ``adv.exc``
  (``wnd:adverbform-best``, ``kgp:AdverbForm``). :mod:`kg.morphology` reads them.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple
from urllib.parse import quote

import pyoxigraph as ox

from kg.build import LoadContext
from kg.errors import SourceError
from kg.vocab import KGP, RDF, RDFS, WN, XSD, data_ns

NS = data_ns("wordnet")

DATA_FILES = {"n": "data.noun", "v": "data.verb", "a": "data.adj", "r": "data.adv"}
SENSE_INDEX = "index.sense"
VERB_EXCEPTIONS = "verb.exc"
OTHER_EXCEPTIONS = {"noun.exc": "noun", "adj.exc": "adjective", "adv.exc": "adverb"}
"""The exception lists besides ``verb.exc`` and the ``kgp:<Pos>Form`` class each one fills."""

LEXNAMES = (
    "adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact",
    "noun.attribute", "noun.body", "noun.cognition", "noun.communication", "noun.event",
    "noun.feeling", "noun.food", "noun.group", "noun.location", "noun.motive", "noun.object",
    "noun.person", "noun.phenomenon", "noun.plant", "noun.possession", "noun.process",
    "noun.quantity", "noun.relation", "noun.shape", "noun.state", "noun.substance", "noun.time",
    "verb.body", "verb.change", "verb.cognition", "verb.communication", "verb.competition",
    "verb.consumption", "verb.contact", "verb.creation", "verb.emotion", "verb.motion",
    "verb.perception", "verb.possession", "verb.social", "verb.stative", "verb.weather",
    "adj.ppl",
)
"""The 45 lexicographer files of WordNet 3.0, indexed by ``lex_filenum`` (lexnames(5WN))."""

SYNSET_CLASS = {"n": "NounSynset", "v": "VerbSynset", "a": "AdjectiveSynset",
                "s": "AdjectiveSatelliteSynset", "r": "AdverbSynset"}
SENSE_CLASS = {"n": "NounWordSense", "v": "VerbWordSense", "a": "AdjectiveWordSense",
               "s": "AdjectiveSatelliteWordSense", "r": "AdverbWordSense"}
SENSE_KEY_TYPE = {"n": "1", "v": "2", "a": "3", "r": "4", "s": "5"}
"""The ``ss_type`` digit of a sense key (senseidx(5WN)) for each synset type letter."""

POINTERS: dict[str, tuple[str, bool]] = {
    "@": (WN.hyponymOf.value, False), "~": (WN.hyponymOf.value, True),
    "@i": (KGP.instanceHyponymOf.value, False), "~i": (KGP.instanceHyponymOf.value, True),
    "#m": (WN.memberMeronymOf.value, False), "%m": (WN.memberMeronymOf.value, True),
    "#s": (WN.substanceMeronymOf.value, False), "%s": (WN.substanceMeronymOf.value, True),
    "#p": (WN.partMeronymOf.value, False), "%p": (WN.partMeronymOf.value, True),
    ";c": (WN.classifiedByTopic.value, False), "-c": (WN.classifiedByTopic.value, True),
    ";r": (WN.classifiedByRegion.value, False), "-r": (WN.classifiedByRegion.value, True),
    ";u": (WN.classifiedByUsage.value, False), "-u": (WN.classifiedByUsage.value, True),
    "!": (WN.antonymOf.value, False),
    "=": (WN.attribute.value, False),
    "+": (WN.derivationallyRelated.value, False),
    "*": (WN.entails.value, False),
    ">": (WN.causes.value, False),
    "&": (WN.similarTo.value, False),
    "^": (WN.seeAlso.value, False),
    "$": (WN.sameVerbGroupAs.value, False),
    "<": (WN.participleOf.value, False),
    "\\": (KGP.pertainsTo.value, False),
}
"""Pointer symbol -> (predicate IRI, reversed). ``reversed`` means the triple is
``target predicate source``, so a pointer and its inverse give the same triple. ``=``
(attribute) is always written ``noun wn:attribute adjective``."""

WN30_SYNSETS = {"n": 82115, "v": 13767, "a": 18156, "r": 3621}
WN30_SENSES = 206941

_MARKER = re.compile(r"\((?:a|p|ip)\)$")
_IRI_SAFE = re.compile(r"[a-z0-9_.-]*")


class Pointer(NamedTuple):
    """One pointer of a synset line."""

    symbol: str
    offset: str
    pos: str
    source: int
    """Word number in the source synset (1-based); 0 for a semantic (synset) pointer."""
    target: int
    """Word number in the target synset (1-based); 0 for a semantic (synset) pointer."""


class SynsetRecord(NamedTuple):
    """One line of a ``data.*`` file."""

    offset: str
    lex_filenum: int
    ss_type: str
    words: tuple[str, ...]
    """The lemmas as written (underscores, case), adjective markers stripped."""
    pointers: tuple[Pointer, ...]
    gloss: str


def parse_data_line(line: str) -> SynsetRecord:
    """Parse one synset line of a ``data.*`` file; raises ValueError saying what is wrong.

    >>> r = parse_data_line("00002098 00 a 01 unable 0 002 = 05200169 n 0000 "
    ...                     "! 00001740 a 0101 | not having the necessary means  ")
    >>> r.offset, r.ss_type, r.words, r.gloss
    ('00002098', 'a', ('unable',), 'not having the necessary means')
    >>> r.pointers[1]
    Pointer(symbol='!', offset='00001740', pos='a', source=1, target=1)
    """
    head, _, gloss = line.partition(" | ")
    t = head.split()
    try:
        offset, lex_filenum, ss_type = t[0], int(t[1]), t[2]
        if len(offset) != 8 or not offset.isdigit():
            raise ValueError(f"synset offset {offset!r} is not 8 digits")
        if ss_type not in SYNSET_CLASS:
            raise ValueError(f"unknown synset type {ss_type!r}")
        if not 0 <= lex_filenum < len(LEXNAMES):
            raise ValueError(f"lexicographer file number {lex_filenum} is not in 0..44")
        n_words = int(t[3], 16)
        words = tuple(_MARKER.sub("", w) for w in t[4:4 + 2 * n_words:2])
        i = 4 + 2 * n_words
        n_ptrs = int(t[i])
        i += 1
        pointers = []
        for _ in range(n_ptrs):
            sym, poff, ppos, st = t[i:i + 4]
            if sym not in POINTERS:
                raise ValueError(f"unknown pointer symbol {sym!r}")
            pointers.append(Pointer(sym, poff, ppos, int(st[:2], 16), int(st[2:], 16)))
            i += 4
        if ss_type == "v" and i < len(t):
            i += 1 + 3 * int(t[i])  # verb frames: f_cnt, then "+ f_num w_num" each
    except (IndexError, ValueError) as e:
        raise ValueError(str(e) or "line ends too early") from None
    if len(words) != n_words or not all(words):
        raise ValueError(f"expected {n_words} words")
    if i != len(t):
        raise ValueError(f"unexpected fields before the gloss: {' '.join(t[i:])!r}")
    return SynsetRecord(offset, lex_filenum, ss_type, words, tuple(pointers), gloss.rstrip())


def parse_sense_line(line: str) -> tuple[str, str, str, int, int]:
    """Parse an ``index.sense`` line into (lemma, ss_type digit, offset, sense number, tag count).

    >>> parse_sense_line("good%3:00:01:: 01123148 1 190")
    ('good', '3', '01123148', 1, 190)
    """
    try:
        key, offset, sense_number, tag_count = line.split()
        lemma, _, rest = key.partition("%")
        return lemma, rest[0], offset, int(sense_number), int(tag_count)
    except (IndexError, ValueError):
        raise ValueError("expected 'sense_key offset sense_number tag_count'") from None


def lemma_iri_part(lemma: str) -> str:
    """The IRI-safe form of a lemma: lower case, ``_`` for spaces, other characters escaped.

    >>> lemma_iri_part("Hawai'i_Volcanoes"), lemma_iri_part("a.k.a. / b")
    ('hawai%27i_volcanoes', 'a.k.a._%2F_b')
    """
    part = lemma.lower().replace(" ", "_")
    return part if _IRI_SAFE.fullmatch(part) else quote(part, safe="")


def _literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _read_lines(path: Path) -> Iterator[tuple[int, str]]:
    try:
        with path.open(encoding="utf-8") as fh:
            yield from enumerate(fh, start=1)
    except UnicodeDecodeError as e:
        raise SourceError(f"{path} is not UTF-8 text ({e}); it is not a WordNet database "
                          "file: point KGPROBE_WORDNET_DIR at a WordNet 3.0 'dict' folder.") from e


def read_synsets(path: Path) -> list[SynsetRecord]:
    """All synsets of one ``data.*`` file (the licence header lines are skipped)."""
    out = []
    for lineno, line in _read_lines(path):
        if line.startswith("  ") or not line.strip():
            continue
        try:
            out.append(parse_data_line(line))
        except ValueError as e:
            raise SourceError(
                f"{path}:{lineno}: not a WordNet data line ({e}). The file is damaged or not "
                "from WordNet 3.0: reinstall wordnet-base or set KGPROBE_WORDNET_DIR."
            ) from None
    return out


def read_sense_index(path: Path) -> dict[tuple[str, str, str], tuple[int, int]]:
    """``index.sense`` as {(lemma, ss_type digit, offset): (sense number, tag count)}."""
    out = {}
    for lineno, line in _read_lines(path):
        if not line.strip():
            continue
        try:
            lemma, ss, offset, number, tags = parse_sense_line(line)
        except ValueError as e:
            raise SourceError(
                f"{path}:{lineno}: not an index.sense line ({e}). Reinstall "
                "wordnet-sense-index or set KGPROBE_WORDNET_DIR."
            ) from None
        out[(lemma, ss, offset)] = (number, tags)
    return out


def read_verb_exceptions(path: Path) -> list[tuple[str, tuple[str, ...]]]:
    """An exception list (``verb.exc``, ``noun.exc``, ...; excfile(5WN)) as (irregular form,
    base forms) in file order: the line ``appalled appal appall`` gives ``("appalled",
    ("appal", "appall"))``."""
    out = []
    for lineno, line in _read_lines(path):
        parts = line.split()
        if not parts:
            continue
        if len(parts) < 2:
            raise SourceError(f"{path}:{lineno}: not a {path.name} line (a form and its base "
                              "forms). Reinstall wordnet-base or set KGPROBE_WORDNET_DIR.")
        out.append((parts[0], tuple(parts[1:])))
    return out


def _write_forms(exceptions: list[tuple[str, tuple[str, ...]]], out: _Writer,
                      pos: str = "verb") -> None:
    """Irregular forms of ``pos`` as ``wnd:<pos>form-<form>``, a ``kgp:<Pos>Form``."""
    lines = []
    cls = KGP[f"{pos.capitalize()}Form"].value
    for form, bases in exceptions:
        v = f"<{_BASE}{pos}form-{lemma_iri_part(form)}>"
        lines.append(f"{v} {_A} <{cls}> .\n")
        lines.append(f"{v} <{KGP.inflectedForm.value}> {_literal(form.replace('_', ' '))} .\n")
        lines.extend(f"{v} <{KGP.baseForm.value}> {_literal(b.replace('_', ' '))} .\n"
                     for b in bases)
    out.write("".join(lines))


def _files(ctx: LoadContext) -> dict[str, Path]:
    by_name = {p.name: p for p in ctx.files}
    needed = [*DATA_FILES.values(), SENSE_INDEX]
    missing = [n for n in needed if n not in by_name]
    if missing:
        raise SourceError(
            f"source {ctx.source.name!r}: the manifest (kg/sources.toml) must list "
            f"{', '.join(needed)}; it lacks {', '.join(missing)}."
        )
    return by_name


def _check_version(ctx: LoadContext, paths: dict[str, Path],
                   synsets: dict[str, list[SynsetRecord]], n_senses: int) -> None:
    if not ctx.options.get("check_version", True):
        return
    for pos, name in DATA_FILES.items():
        if len(synsets[pos]) != WN30_SYNSETS[pos]:
            raise SourceError(
                f"{paths[name]} has {len(synsets[pos]):,} synsets, WordNet 3.0 has "
                f"{WN30_SYNSETS[pos]:,}: this is another WordNet version. Install the 3.0 files "
                "(Debian wordnet-base 1:3.0) or set KGPROBE_WORDNET_DIR to them, or set "
                "options = { check_version = false } under [wordnet] in kg/sources.toml."
            )
    if n_senses != WN30_SENSES:
        raise SourceError(
            f"{paths[SENSE_INDEX]} has {n_senses:,} senses, WordNet 3.0 has {WN30_SENSES:,}: "
            "install wordnet-sense-index 1:3.0 or set KGPROBE_WORDNET_DIR."
        )


_A = f"<{RDF.type.value}>"
_LABEL = f"<{RDFS.label.value}>"
_INTEGER = f"^^<{XSD.integer.value}>"
_BASE = str(NS)
_FILE_POS = {"s": "a"}
"""Satellite synsets live in ``data.adj``."""
_SUPER = {"s": "a"}
"""Satellites are also typed as adjective synsets / senses (a subclass in the W3C schema)."""


def _types(subject: str, table: dict[str, str], ss_type: str) -> str:
    classes = [table[ss_type]] + ([table[_SUPER[ss_type]]] if ss_type in _SUPER else [])
    return "".join(f"{{{subject}}} {_A} <{WN[c].value}> .\n" for c in classes)


_SYNSET_LINES = {
    k: f"{{s}} {_A} <{WN.Synset.value}> .\n" + _types("s", SYNSET_CLASS, k)
    + f"{{s}} <{WN.synsetId.value}> \"{{offset}}\" .\n"
    f"{{s}} <{WN.gloss.value}> {{gloss}} .\n"
    f"{{s}} {_LABEL} {{label}} .\n"
    f"{{s}} <{KGP.lexicalDomain.value}> {{domain}} .\n"
    for k in SYNSET_CLASS
}
_SENSE_LINES = {
    k: f"{{ws}} {_A} <{WN.WordSense.value}> .\n" + _types("ws", SENSE_CLASS, k)
    + f"{{s}} <{WN.containsWordSense.value}> {{ws}} .\n"
    f"{{ws}} <{WN.word.value}> {{w}} .\n"
    f"{{ws}} <{KGP.senseNumber.value}> \"{{number}}\"{_INTEGER} .\n"
    f"{{ws}} {_LABEL} {{label}} .\n"
    for k in SENSE_CLASS
}
_DOMAINS = ['"' + n + '"' for n in LEXNAMES]
_TAG_LINE = f"{{ws}} <{WN.tagCount.value}> \"{{tags}}\"{_INTEGER} .\n"
_WORD_LINES = f"{{w}} {_A} <{WN.Word.value}> .\n{{w}} <{WN.lexicalForm.value}> {{form}} .\n"
_COLLOCATION_LINE = f"{{w}} {_A} <{WN.Collocation.value}> .\n"


class _Writer:
    """Collects N-Triples text and bulk-loads it into the source graph in chunks."""

    def __init__(self, ctx: LoadContext, chunk_chars: int = 64 << 20) -> None:
        self.ctx, self.chunk_chars = ctx, chunk_chars
        self.parts: list[str] = []
        self.size = 0
        self.triples = 0

    def write(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(text)
        if self.size >= self.chunk_chars:
            self.flush()

    def flush(self) -> None:
        if self.parts:
            text = "".join(self.parts)
            self.triples += text.count("\n")
            self.ctx.load_rdf(text, ox.RdfFormat.N_TRIPLES)
            self.parts, self.size = [], 0


Nodes = dict[tuple[str, str], tuple[str, list[str]]]
"""(data file POS letter, offset) -> (synset IRI, sense IRI of each word number - 1), in
N-Triples form (``<...>``)."""


def _write_synsets(synsets: dict[str, list[SynsetRecord]],
                   index: dict[tuple[str, str, str], tuple[int, int]],
                   out: _Writer) -> tuple[Nodes, int, int, int]:
    """Write synsets, senses and words; returns (nodes, senses, words, senses not in index)."""
    nodes: Nodes = {}
    words: set[str] = set()
    n_senses = missing = 0
    for pos, records in synsets.items():
        for r in records:
            s = f"<{_BASE}synset-{r.offset}-{r.ss_type}>"
            parts = [_SYNSET_LINES[r.ss_type].format(
                s=s, offset=r.offset, gloss=_literal(r.gloss),
                label=_literal(r.words[0].replace("_", " ")), domain=_DOMAINS[r.lex_filenum])]
            key_type = SENSE_KEY_TYPE[r.ss_type]
            sense_lines = _SENSE_LINES[r.ss_type]
            senses: list[str] = []
            seen: dict[str, str] = {}
            for position, written in enumerate(r.words, start=1):
                lemma = written.lower()
                if lemma in seen:  # "Earth" and "earth" in one synset are one word sense
                    senses.append(seen[lemma])
                    continue
                found = index.get((lemma, key_type, r.offset))
                number, tags = found if found else (position, None)
                missing += found is None
                part = lemma if _IRI_SAFE.fullmatch(lemma) else quote(lemma, safe="")
                ws = f"<{_BASE}wordsense-{part}-{r.ss_type}-{number}>"
                w = f"<{_BASE}word-{part}>"
                seen[lemma] = ws
                senses.append(ws)
                n_senses += 1
                parts.append(sense_lines.format(s=s, ws=ws, w=w, number=number,
                                                 label=_literal(written.replace("_", " "))))
                if tags is not None:
                    parts.append(_TAG_LINE.format(ws=ws, tags=tags))
                if w not in words:
                    words.add(w)
                    parts.append(_WORD_LINES.format(w=w, form=_literal(lemma.replace("_", " "))))
                    if "_" in lemma:
                        parts.append(_COLLOCATION_LINE.format(w=w))
            nodes[(pos, r.offset)] = (s, senses)
            out.write("".join(parts))
    return nodes, n_senses, len(words), missing


def _pointer_triples(synsets: dict[str, list[SynsetRecord]], nodes: Nodes,
                     paths: dict[str, Path]) -> set[tuple[str, str, str]]:
    """Every pointer as an (s, predicate IRI, o) triple, each relation once."""
    triples: set[tuple[str, str, str]] = set()
    for pos, records in synsets.items():
        for r in records:
            s, senses = nodes[(pos, r.offset)]
            for ptr in r.pointers:
                target = nodes.get((_FILE_POS.get(ptr.pos, ptr.pos), ptr.offset))
                if target is None:
                    raise SourceError(
                        f"{paths[DATA_FILES[pos]]}: synset {r.offset} points ({ptr.symbol}) to "
                        f"{ptr.offset} {ptr.pos}, which is not in any data file; the files come "
                        "from different WordNet versions: reinstall wordnet-base."
                    )
                predicate, reverse = POINTERS[ptr.symbol]
                if ptr.symbol == "=" and r.ss_type in "as":
                    reverse = True  # always noun wn:attribute adjective
                if ptr.source and ptr.target:
                    try:
                        subj, obj = senses[ptr.source - 1], target[1][ptr.target - 1]
                    except IndexError:
                        raise SourceError(
                            f"{paths[DATA_FILES[pos]]}: synset {r.offset} has a pointer "
                            f"'{ptr.symbol} {ptr.offset} {ptr.pos} "
                            f"{ptr.source:02x}{ptr.target:02x}' to a word number that does not "
                            "exist; the file is damaged: reinstall wordnet-base."
                        ) from None
                else:
                    subj, obj = s, target[0]
                triples.add((obj, predicate, subj) if reverse else (subj, predicate, obj))
    return triples


def load(ctx: LoadContext) -> None:
    """Load WordNet 3.0 into ``ctx.graph`` (see the module docstring for the vocabulary)."""
    t0 = time.perf_counter()
    paths = _files(ctx)
    index = read_sense_index(paths[SENSE_INDEX])
    synsets = {pos: read_synsets(paths[name]) for pos, name in DATA_FILES.items()}
    _check_version(ctx, paths, synsets, len(index))
    parse_s = time.perf_counter() - t0

    out = _Writer(ctx)
    nodes, n_senses, n_words, missing = _write_synsets(synsets, index, out)
    pointers = _pointer_triples(synsets, nodes, paths)
    per_predicate: Counter[str] = Counter()
    lines = []
    for subj, predicate, obj in pointers:
        per_predicate[predicate.rsplit("/", 1)[-1].rsplit("#", 1)[-1]] += 1
        lines.append(f"{subj} <{predicate}> {obj} .\n")
    out.write("".join(lines))
    exceptions = read_verb_exceptions(paths[VERB_EXCEPTIONS]) if VERB_EXCEPTIONS in paths else []
    _write_forms(exceptions, out)
    other_forms = {}
    for name, pos in OTHER_EXCEPTIONS.items():
        if name in paths:
            forms = read_verb_exceptions(paths[name])
            _write_forms(forms, out, pos)
            other_forms[f"{pos}_forms"] = len(forms)
    out.flush()

    if missing:
        ctx.warn(f"{missing} word sense(s) missing from {paths[SENSE_INDEX]}; they are "
                 "numbered by their position in the synset and have no wn:tagCount.")
    ctx.stats.update({
        "synsets": sum(len(v) for v in synsets.values()),
        "nouns": len(synsets["n"]),
        "verbs": len(synsets["v"]),
        "adjectives": len(synsets["a"]),
        "satellites": sum(r.ss_type == "s" for r in synsets["a"]),
        "adverbs": len(synsets["r"]),
        "senses": n_senses,
        "words": n_words,
        "pointers": len(pointers),
        "pointers_by_predicate": dict(sorted(per_predicate.items())),
        "verb_forms": len(exceptions),
        **other_forms,
        "senses_missing_from_index": missing,
        "triples_written": out.triples,
        "parse_s": round(parse_s, 2),
        "load_s": round(time.perf_counter() - t0, 2),
    })
