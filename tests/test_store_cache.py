"""Work that depends only on the store is done once per store (issue 46): WordNet's morphology
(the lemmas and exception lists that ``[DET]`` and ``inflections:`` read) is kept inside the
store's folder (kg.storecache) and read from there until the store changes.

A mini WordNet is loaded with the real loader into a store on disk. To tell a read from the
cache from a read of the store, the test writes a lemma into the cached file that the store
does not hold: it comes back while the store is unchanged, and goes once the store is written.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pyoxigraph as ox
import pytest

from kg.build import load_source, warm_caches
from kg.manifest import pick
from kg.morphology import read_morphology
from kg.store import LocalStore
from kg.storecache import CACHE_DIR

NOUNS = ["finger", "foot", "spectacles", "spectacle"]


def disk_store(tmp_path: Path) -> Path:
    files = {"data.noun": [f"{i + 1:08d} 00 n 01 {w} 0 000 | a test word  "
                           for i, w in enumerate(NOUNS)],
             "data.verb": [], "data.adj": [], "data.adv": [], "index.sense": [],
             "verb.exc": ["had have"], "noun.exc": ["feet foot"]}
    for name, lines in files.items():
        (tmp_path / name).write_text("".join(line + "\n" for line in lines))
    path = tmp_path / "store"
    store = ox.Store(str(path))
    source = dataclasses.replace(pick(["wordnet"])[0], options={"check_version": False})
    load_source(store, source, [tmp_path / n for n in files], tmp_path)
    store.flush()
    del store
    return path


def read(path: Path) -> set[str]:
    read_morphology.cache_clear()
    store = LocalStore.open(path)
    try:
        return set(read_morphology(store).lemmas["noun"])
    finally:
        del store


def test_morphology_is_read_once_per_store_and_again_when_it_changes(tmp_path: Path) -> None:
    path = disk_store(tmp_path)
    assert read(path) == set(NOUNS)
    cached = path / CACHE_DIR / "morphology.json"
    saved = json.loads(cached.read_text())
    assert saved["value"]["exceptions"]["noun"] == {"feet": ["foot"]}
    saved["value"]["lemmas"]["noun"].append("planted")  # only the cache holds it
    cached.write_text(json.dumps(saved))
    assert read(path) == {*NOUNS, "planted"}  # from the cache: the store was not read
    # another process reads the same cache
    code = ("from kg.store import LocalStore; from kg.morphology import read_morphology; "
            f"print(sorted(read_morphology(LocalStore.open({str(path)!r})).lemmas['noun']))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "'planted'" in out
    store = ox.Store(str(path))  # a writer: the store changes
    store.add(ox.Quad(ox.NamedNode("urn:x:a"), ox.NamedNode("urn:x:b"), ox.Literal("c"),
                      ox.NamedNode("urn:x:g")))
    store.flush()
    del store
    assert read(path) == set(NOUNS)  # read from the store again


def test_a_store_folder_that_cannot_be_written_only_loses_the_saving(tmp_path: Path) -> None:
    path = disk_store(tmp_path)
    (path / CACHE_DIR).write_text("a file where the cache folder would go")
    assert read(path) == set(NOUNS)
    assert read(path) == set(NOUNS)


def test_the_build_reads_the_morphology_once_for_the_exports(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """kg.build ends with kg.build.warm_caches: the first export finds the cache in place."""
    path = disk_store(tmp_path)
    warm_caches(path, progress=True)
    err = capfd.readouterr().err
    assert "reading WordNet's morphology for [DET] (once per store): done in" in err
    saved = json.loads((path / CACHE_DIR / "morphology.json").read_text())
    assert sorted(saved["value"]["lemmas"]["noun"]) == sorted(NOUNS)
