"""Tests of the WordNet 3.0 loader (kg/wordnet.py).

Three groups:

- the line parsers on real lines copied from the WordNet 3.0 database files;
- a load of a hand-made six-synset database (fast), for the mapping rules: inverse pointers
  stored once, lexical pointers between senses, case variants, markers, the version check;
- a load of the real WordNet 3.0 (slow), whose counts are checked against the published
  WordNet 3.0 statistics and whose relations are checked against the raw files, read here
  with plain string matching.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyoxigraph as ox
import pytest

from kg import config, wordnet
from kg.build import load_source
from kg.errors import SourceError
from kg.manifest import Source, pick
from kg.store import LocalStore
from kg.vocab import PREFIXES, graph
from tests.data import missing

PREFIX = "".join(f"PREFIX {k}: <{v}>\n" for k, v in PREFIXES.items())
PREFIX += "PREFIX wnd: <https://w3id.org/kgprobe/data/wordnet/>\n"
G = graph("wordnet").value


def ask(store: LocalStore, pattern: str) -> bool:
    return store.query(f"{PREFIX} ASK {{ GRAPH <{G}> {{ {pattern} }} }}")[0]["ask"]


def count(store: LocalStore, pattern: str, what: str = "*") -> int:
    q = f"{PREFIX} SELECT (COUNT({what}) AS ?n) WHERE {{ GRAPH <{G}> {{ {pattern} }} }}"
    return store.query(q)[0]["n"]


# --- the parsers, on real lines ----------------------------------------------------------

DOG = ("02084071 05 n 03 dog 0 domestic_dog 0 Canis_familiaris 0 023 @ 02083346 n 0000 "
       "@ 01317541 n 0000 #m 02083863 n 0000 #m 07994941 n 0000 ~ 01322604 n 0000 "
       "~ 01322983 n 0000 ~ 01323449 n 0000 ~ 01324305 n 0000 ~ 01325095 n 0000 "
       "~ 02084732 n 0000 ~ 02084861 n 0000 ~ 02085998 n 0000 ~ 02086324 n 0000 "
       "~ 02086723 n 0000 ~ 02087122 n 0000 ~ 02087314 n 0000 ~ 02087551 n 0000 "
       "~ 02103406 n 0000 ~ 02112826 n 0000 ~ 02113335 n 0000 %p 02158846 n 0000 "
       "+ 01177399 v 0101 + 02096853 a 0101 | a member of the genus Canis (probably descended "
       "from the common wolf) that has been domesticated by man since prehistoric times; "
       'occurs in many breeds; "the dog barked all night"  \n')
RESPIRE = ("00002325 29 v 01 respire 1 005 $ 00001740 v 0000 @ 02108395 v 0000 "
           "+ 03110323 a 0101 + 00831191 n 0103 + 00830811 n 0101 01 + 02 00 | undergo the "
           "biomedical and metabolic processes of respiration by taking up oxygen and producing "
           "carbon monoxide  \n")
GALORE = ("00014358 00 s 02 abounding 0 galore(ip) 0 001 & 00013887 a 0000 | existing in "
          'abundance; "abounding confidence"; "whiskey galore"  \n')
A_CAPPELLA = ('00001740 02 r 01 a_cappella 0 000 | without musical accompaniment; "they '
              'performed a cappella"  \n')


def test_parse_noun_line() -> None:
    r = wordnet.parse_data_line(DOG)
    assert (r.offset, r.lex_filenum, r.ss_type) == ("02084071", 5, "n")
    assert r.words == ("dog", "domestic_dog", "Canis_familiaris")
    assert len(r.pointers) == 23
    assert r.pointers[0] == wordnet.Pointer("@", "02083346", "n", 0, 0)
    assert r.pointers[-1] == wordnet.Pointer("+", "02096853", "a", 1, 1)
    assert r.gloss.startswith("a member of the genus Canis")
    assert r.gloss.endswith('"the dog barked all night"')


def test_parse_verb_line_skips_frames() -> None:
    r = wordnet.parse_data_line(RESPIRE)
    assert r.words == ("respire",)
    assert [p.symbol for p in r.pointers] == ["$", "@", "+", "+", "+"]
    assert r.pointers[3].target == 3  # "0103": word 1 here, word 3 there
    assert r.gloss.startswith("undergo the biomedical")


def test_parse_satellite_strips_marker_and_adverb_without_pointers() -> None:
    r = wordnet.parse_data_line(GALORE)
    assert (r.ss_type, r.words) == ("s", ("abounding", "galore"))
    r = wordnet.parse_data_line(A_CAPPELLA)
    assert (r.ss_type, r.lex_filenum, r.words, r.pointers) == ("r", 2, ("a_cappella",), ())


@pytest.mark.parametrize("line", [
    DOG[:60],                                       # cut in the middle of the word list
    DOG.replace(" 023 @", " 024 @", 1),             # one pointer fewer than announced
    DOG.replace("@ 02083346", "?? 02083346", 1),    # unknown pointer symbol
    DOG.replace("02084071 05", "2084071 05", 1),    # offset not 8 digits
    DOG.replace("02084071 05", "02084071 45", 1),   # no lexicographer file 45
])
def test_parse_rejects_damaged_lines(line: str) -> None:
    with pytest.raises(ValueError):
        wordnet.parse_data_line(line)


def test_parse_sense_line() -> None:
    assert wordnet.parse_sense_line("galore%5:00:00:abundant:00 00014358 2 0\n") == (
        "galore", "5", "00014358", 2, 0)
    with pytest.raises(ValueError):
        wordnet.parse_sense_line("galore%5:00:00:abundant:00 00014358 2")


# --- a hand-made database ----------------------------------------------------------------

MINI = {
    "data.noun": [
        "  1 This header line starts with two spaces and is skipped.  ",
        "00000001 03 n 01 entity 0 001 ~ 00000002 n 0000 | that which exists  ",
        '00000002 05 n 02 Dog 0 dog 1 004 @ 00000001 n 0000 %p 00000003 n 0000 '
        '= 00000004 a 0000 + 00000001 v 0201 | a "domestic" animal \\ pet  ',
        "00000003 08 n 01 tail 0 001 #p 00000002 n 0000 | the back part  ",
    ],
    "data.verb": [
        "00000001 29 v 01 bark 0 001 + 00000002 n 0102 01 + 02 00 | make a barking sound  ",
    ],
    "data.adj": [
        "00000004 00 a 02 good 0 fine(p) 0 003 = 00000002 n 0000 ! 00000005 a 0101 "
        "& 00000006 a 0000 | having desirable qualities  ",
        "00000005 00 a 01 bad 0 001 ! 00000004 a 0101 | not good  ",
        "00000006 00 s 01 nice 0 001 & 00000004 a 0000 | pleasant  ",
    ],
    "data.adv": [
        "00000007 02 r 01 well 0 001 \\ 00000004 a 0101 | in a good way  ",
    ],
    "index.sense": [
        "bad%3:00:00:: 00000005 1 7",
        "bark%2:29:00:: 00000001 1 3",
        "dog%1:05:00:: 00000002 1 42",
        "entity%1:03:00:: 00000001 1 11",
        "fine%3:00:00:: 00000004 2 0",
        "good%3:00:00:: 00000004 1 5",
        "nice%5:00:00:good:00 00000006 1 2",
        "tail%1:08:00:: 00000003 1 0",
    ],  # "well" is left out on purpose
}
NAMES = ["data.noun", "data.verb", "data.adj", "data.adv", "index.sense"]


def write_mini(folder: Path, changes: dict[str, list[str]] | None = None) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    for name, lines in {**MINI, **(changes or {})}.items():
        (folder / name).write_text("".join(line + "\n" for line in lines))
    return [folder / n for n in NAMES]


def wordnet_source(**options: object) -> Source:
    return dataclasses.replace(pick(["wordnet"])[0], options=dict(options))


@pytest.fixture(scope="module")
def mini(tmp_path_factory: pytest.TempPathFactory) -> tuple[LocalStore, list[str]]:
    files = write_mini(tmp_path_factory.mktemp("wn"))
    store = ox.Store()
    report = load_source(store, wordnet_source(check_version=False), files, files[0].parent)
    return LocalStore(store), report.warnings


def test_mini_types_labels_and_domains(mini: tuple[LocalStore, list[str]]) -> None:
    store, _ = mini
    assert count(store, "?s a wn:Synset") == 8
    assert count(store, "?s a wn:AdjectiveSynset") == 3   # good, bad and the satellite nice
    assert ask(store, "wnd:synset-00000006-s a wn:AdjectiveSatelliteSynset")
    assert ask(store, "wnd:synset-00000001-n a wn:NounSynset . wnd:synset-00000001-v a "
                      "wn:VerbSynset . wnd:synset-00000007-r a wn:AdverbSynset")
    assert ask(store, 'wnd:synset-00000002-n rdfs:label "Dog" ; wn:synsetId "00000002" ; '
                      'kgp:lexicalDomain "noun.animal" ; wn:gloss \'a "domestic" animal \\\\ pet\'')
    assert ask(store, 'wnd:synset-00000003-n kgp:lexicalDomain "noun.body"')
    assert ask(store, 'wnd:synset-00000001-v kgp:lexicalDomain "verb.body"')


def test_mini_senses_and_words(mini: tuple[LocalStore, list[str]]) -> None:
    store, warnings = mini
    # "Dog" and "dog" in one synset are one word sense, labelled as first written
    assert count(store, "wnd:synset-00000002-n wn:containsWordSense ?ws") == 1
    assert ask(store, 'wnd:synset-00000002-n wn:containsWordSense wnd:wordsense-dog-n-1 . '
                      'wnd:wordsense-dog-n-1 a wn:NounWordSense ; rdfs:label "Dog" ; '
                      'wn:word wnd:word-dog ; kgp:senseNumber 1 ; wn:tagCount 42 . '
                      'wnd:word-dog a wn:Word ; wn:lexicalForm "dog"')
    # the "(p)" marker is not part of the lemma; the sense number comes from index.sense
    assert ask(store, 'wnd:wordsense-fine-a-2 wn:word wnd:word-fine ; kgp:senseNumber 2 . '
                      'wnd:word-fine wn:lexicalForm "fine"')
    assert ask(store, "wnd:wordsense-nice-s-1 a wn:AdjectiveSatelliteWordSense, "
                      "wn:AdjectiveWordSense")
    # "well" is not in index.sense: numbered by position, no tag count, one warning
    assert ask(store, "wnd:wordsense-well-r-1 kgp:senseNumber 1")
    assert not ask(store, "wnd:wordsense-well-r-1 wn:tagCount ?t")
    assert len(warnings) == 1 and "1 word sense(s)" in warnings[0]
    assert count(store, "?w a wn:Word") == 9
    assert count(store, "?w a wn:Collocation") == 0


def test_mini_pointers(mini: tuple[LocalStore, list[str]]) -> None:
    store, _ = mini
    # @ and ~, %p and #p, = on both sides: one triple each
    assert count(store, "?a wn:hyponymOf ?b") == 1
    assert ask(store, "wnd:synset-00000002-n wn:hyponymOf wnd:synset-00000001-n")
    assert count(store, "?a wn:partMeronymOf ?b") == 1
    assert ask(store, "wnd:synset-00000003-n wn:partMeronymOf wnd:synset-00000002-n")
    assert count(store, "?a wn:attribute ?b") == 1
    assert ask(store, "wnd:synset-00000002-n wn:attribute wnd:synset-00000004-a")
    # symmetric relations keep both directions
    assert count(store, "?a wn:antonymOf ?b") == 2
    assert ask(store, "wnd:wordsense-good-a-1 wn:antonymOf wnd:wordsense-bad-a-1 . "
                      "wnd:wordsense-bad-a-1 wn:antonymOf wnd:wordsense-good-a-1")
    assert count(store, "?a wn:similarTo ?b") == 2
    # lexical pointers join senses; word 2 of the dog synset ("dog") is the Dog sense
    assert ask(store, "wnd:wordsense-bark-v-1 wn:derivationallyRelated wnd:wordsense-dog-n-1 . "
                      "wnd:wordsense-dog-n-1 wn:derivationallyRelated wnd:wordsense-bark-v-1")
    assert ask(store, "wnd:wordsense-well-r-1 kgp:pertainsTo wnd:wordsense-good-a-1")
    # noun 00000001 and verb 00000001 are different synsets
    assert not ask(store, "wnd:synset-00000001-v ?p wnd:synset-00000002-n")


def test_version_check_names_the_file(tmp_path: Path) -> None:
    files = write_mini(tmp_path)
    with pytest.raises(SourceError, match=r"data\.noun has 3 synsets, WordNet 3\.0 has 82,115"):
        load_source(ox.Store(), wordnet_source(), files, tmp_path)


def test_damaged_file_names_file_and_line(tmp_path: Path) -> None:
    bad = [*MINI["data.verb"], "00000009 29 v 01 howl 0 002 @ 00000001 v 0000 | cry  "]
    files = write_mini(tmp_path, {"data.verb": bad})
    with pytest.raises(SourceError, match=r"data\.verb:2: "):
        load_source(ox.Store(), wordnet_source(check_version=False), files, tmp_path)


def test_dangling_pointer_is_an_error(tmp_path: Path) -> None:
    lines = [*MINI["data.noun"][:3], "00000003 08 n 01 tail 0 001 #p 00000099 n 0000 | part  "]
    files = write_mini(tmp_path, {"data.noun": lines})
    with pytest.raises(SourceError, match=r"data\.noun.*00000099"):
        load_source(ox.Store(), wordnet_source(check_version=False), files, tmp_path)


def test_missing_file_in_manifest(tmp_path: Path) -> None:
    files = write_mini(tmp_path)
    with pytest.raises(SourceError, match=r"lacks index\.sense"):
        load_source(ox.Store(), wordnet_source(check_version=False), files[:4], tmp_path)


# --- the real WordNet 3.0 -----------------------------------------------------------------


def wordnet_files() -> list[Path]:
    try:
        return pick(["wordnet"])[0].resolve()
    except SourceError as e:
        missing("WordNet 3.0 (apt-get install wordnet-base wordnet-sense-index)", e)


@pytest.fixture(scope="module")
def full() -> LocalStore:
    store = ox.Store()
    load_source(store, pick(["wordnet"])[0], wordnet_files(), config.data_dir())
    return LocalStore(store)


@pytest.fixture(scope="module")
def raw() -> dict[str, str]:
    """The raw text of the database files, by file name."""
    return {p.name: p.read_text(encoding="utf-8") for p in wordnet_files()}


def raw_synset(raw: dict[str, str], name: str, offset: str) -> str:
    start = raw[name].index("\n" + offset + " ") + 1
    return raw[name][start:raw[name].index("\n", start)]


def raw_sense(raw: dict[str, str], key: str) -> list[str]:
    """(offset, sense number, tag count) of a sense key in index.sense."""
    start = raw["index.sense"].index("\n" + key + " ") + 1
    return raw["index.sense"][start:raw["index.sense"].index("\n", start)].split()[1:]


@pytest.mark.slow
@pytest.mark.parametrize(("cls", "expected"), [
    ("Synset", 117_659), ("NounSynset", 82_115), ("VerbSynset", 13_767),
    ("AdjectiveSynset", 18_156), ("AdjectiveSatelliteSynset", 10_693), ("AdverbSynset", 3_621),
    ("WordSense", 206_941), ("Word", 147_306),
])
def test_full_counts(full: LocalStore, cls: str, expected: int) -> None:
    assert count(full, f"?s a wn:{cls}") == expected


@pytest.mark.slow
def test_full_every_synset_has_one_gloss_and_label(full: LocalStore) -> None:
    assert count(full, "?s wn:gloss ?g") == 117_659
    assert count(full, "?s rdfs:label ?l ; a wn:Synset") == 117_659
    assert count(full, "?w wn:lexicalForm ?f", "DISTINCT ?f") == 147_306
    assert count(full, "?s wn:containsWordSense ?ws") == 206_941
    assert count(full, "?ws wn:tagCount ?t") == 206_941  # index.sense covers every sense


@pytest.mark.slow
def test_full_pointer_counts_match_raw_files(full: LocalStore, raw: dict[str, str]) -> None:
    def pointers(symbol: str, *names: str) -> int:
        return sum(raw[n].count(f" {symbol} ") for n in names)

    hyper = pointers("@", "data.noun", "data.verb")
    assert hyper == pointers("~", "data.noun", "data.verb")  # every pointer has its inverse
    assert count(full, "?a wn:hyponymOf ?b") == hyper
    assert count(full, "?a kgp:instanceHyponymOf ?b") == pointers("@i", "data.noun")
    assert count(full, "?a wn:partMeronymOf ?b") == pointers("#p", "data.noun")
    assert count(full, "?a wn:memberMeronymOf ?b") == pointers("%m", "data.noun")
    assert count(full, "?a wn:entails ?b") == pointers("*", "data.verb")
    # every pointer lands on a loaded synset or sense
    assert count(full, "?a wn:hyponymOf ?b FILTER NOT EXISTS { ?b a wn:Synset }") == 0
    assert count(full, "?a wn:antonymOf ?b FILTER NOT EXISTS { ?b a wn:WordSense }") == 0


@pytest.mark.slow
def test_full_dog(full: LocalStore, raw: dict[str, str]) -> None:
    offset = raw_sense(raw, "dog%1:05:00::")[0]
    line = raw_synset(raw, "data.noun", offset)
    assert line.split()[1] == "05"  # lexicographer file 05 is noun.animal
    for hyper in ("02083346", "01317541"):  # canine.n.02, domestic_animal.n.01
        assert f"@ {hyper} n 0000" in line
        assert ask(full, f"wnd:synset-{offset}-n wn:hyponymOf wnd:synset-{hyper}-n")
    n = raw_sense(raw, "domestic_dog%1:05:00::")[1]
    assert ask(full, f'wnd:synset-{offset}-n kgp:lexicalDomain "noun.animal" ; rdfs:label "dog"'
                     f" ; wn:containsWordSense wnd:wordsense-domestic_dog-n-{n}")
    assert ask(full, 'wnd:word-domestic_dog a wn:Collocation ; wn:lexicalForm "domestic dog"')


@pytest.mark.slow
def test_full_good_bad_antonyms(full: LocalStore, raw: dict[str, str]) -> None:
    good_offset, good_n, good_tags = raw_sense(raw, "good%3:00:01::")
    bad_offset, bad_n, _ = raw_sense(raw, "bad%3:00:00::")
    line = raw_synset(raw, "data.adj", good_offset)
    assert line.split()[4] == "good" and f"! {bad_offset} a 0101" in line
    good, bad = f"wnd:wordsense-good-a-{good_n}", f"wnd:wordsense-bad-a-{bad_n}"
    assert ask(full, f"{good} wn:antonymOf {bad} . {bad} wn:antonymOf {good}")
    assert ask(full, f"{good} wn:tagCount {good_tags} . "
                     f"wnd:synset-{good_offset}-a wn:containsWordSense {good}")


@pytest.mark.slow
def test_full_tree_trunk_and_einstein(full: LocalStore, raw: dict[str, str]) -> None:
    tree = raw_sense(raw, "tree%1:20:00::")[0]
    trunk = raw_sense(raw, "trunk%1:20:00::")[0]
    assert f"%p {trunk} n 0000" in raw_synset(raw, "data.noun", tree)
    assert ask(full, f"wnd:synset-{trunk}-n wn:partMeronymOf wnd:synset-{tree}-n")

    einstein = raw_sense(raw, "einstein%1:18:00::")[0]
    physicist = raw_sense(raw, "physicist%1:18:00::")[0]
    line = raw_synset(raw, "data.noun", einstein)
    assert f"@i {physicist} n 0000" in line
    assert ask(full, f"wnd:synset-{einstein}-n kgp:instanceHyponymOf wnd:synset-{physicist}-n")
    assert not ask(full, f"wnd:synset-{einstein}-n wn:hyponymOf ?any")
    first = line.split()[4].replace("_", " ")
    assert ask(full, f'wnd:synset-{einstein}-n rdfs:label "{first}"')
