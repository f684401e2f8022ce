"""Shared fixtures: a tiny knowledge store, in memory or on disk.

The tiny store holds two named graphs (``kg.vocab.graph("animals")`` and ``graph("colours")``)
with IRIs under ``http://example.org/``:

- animals: rdfs:subClassOf edges dog->mammal, dog->pet, cat->mammal, mammal->animal,
  sparrow->bird, bird->animal (6 edges); an English rdfs:label for each of the 7 classes, and
  "chien"@fr for dog; ex:legs (xsd:integer) dog 4, cat 4, sparrow 2; ex:weight dog 30.5
  (xsd:decimal), cat 4.5 (xsd:double), sparrow none; ex:tame dog true (xsd:boolean).
- colours: red->colour, blue->colour (2 edges); English labels for the 3 classes.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

from tests import import_guard

import_guard.install()  # before any kgprobe module loads: every import from here on is watched

import pyoxigraph as ox  # noqa: E402
import pytest  # noqa: E402

from kg.store import LocalStore  # noqa: E402
from kg.vocab import RDFS, XSD, Namespace, graph  # noqa: E402

EX = Namespace("http://example.org/")


def _share_the_cores() -> None:
    """Under pytest-xdist (scripts/test.sh runs ``-n auto``), give each worker its share of the
    cores for torch and OpenMP (also in the subprocesses it starts), so that two workers on two
    cores do not each start a thread per core. Set here, before the first import of torch."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers <= 1:
        return
    share = str(max(1, len(os.sched_getaffinity(0)) // workers))
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, share)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))


_share_the_cores()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist, the files with a test marked slow go first (each file's tests in
    their order): scripts/test.sh hands out whole files (--dist loadfile) in this order
    (--no-loadscope-reorder), so the long files (a llama.cpp server, a real model) start early
    and the many short ones even out the end, instead of a long file starting last."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    first: dict[Path, int] = {}
    for i, item in enumerate(items):
        first.setdefault(item.path, i)
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: (item.path not in slow, first[item.path]))


_REPORTED: set[import_guard.Violation] = set()


@pytest.fixture(autouse=True)
def _layers_import_only_what_they_may() -> Iterator[None]:
    """Fail the test during which kgprobe's code imported what its layer may not
    (tests/import_guard.py: an import hook, whatever the spelling of the import)."""
    start = len(import_guard.VIOLATIONS)
    yield
    new = import_guard.VIOLATIONS[start:]
    _REPORTED.update(new)
    if new:
        pytest.fail("the layers' import rules (docs/architecture.md) were broken:\n"
                    + "\n".join(f"  {v}" for v in new), pytrace=False)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the session for a broken import rule outside any test (at collection)."""
    left = [v for v in import_guard.VIOLATIONS if v not in _REPORTED]
    if left:
        sys.stderr.write("the layers' import rules (docs/architecture.md) were broken outside "
                         "any test:\n" + "".join(f"  {v}\n" for v in left))
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _tiny_quads() -> list[ox.Quad]:
    animals, colours = graph("animals"), graph("colours")
    quads = []
    edges = {animals: [("dog", "mammal"), ("dog", "pet"), ("cat", "mammal"),
                       ("mammal", "animal"), ("sparrow", "bird"), ("bird", "animal")],
             colours: [("red", "colour"), ("blue", "colour")]}
    for g, pairs in edges.items():
        names = sorted({n for pair in pairs for n in pair})
        quads += [ox.Quad(EX[c], RDFS.subClassOf, EX[p], g) for c, p in pairs]
        quads += [ox.Quad(EX[n], RDFS.label, ox.Literal(n), g) for n in names]
    quads.append(ox.Quad(EX.dog, RDFS.label, ox.Literal("chien", language="fr"), animals))
    for animal, legs in (("dog", 4), ("cat", 4), ("sparrow", 2)):
        quads.append(ox.Quad(EX[animal], EX.legs, ox.Literal(legs), animals))
    quads.append(ox.Quad(EX.dog, EX.weight, ox.Literal("30.5", datatype=XSD.decimal), animals))
    quads.append(ox.Quad(EX.cat, EX.weight, ox.Literal("4.5e0", datatype=XSD.double), animals))
    quads.append(ox.Quad(EX.dog, EX.tame, ox.Literal(True), animals))
    return quads


@pytest.fixture
def tiny_quads() -> list[ox.Quad]:
    """The quads of the tiny store (see the module docstring)."""
    return _tiny_quads()


@pytest.fixture
def tiny_store(tiny_quads: list[ox.Quad]) -> LocalStore:
    """An in-memory LocalStore holding the tiny store's quads."""
    store = LocalStore.in_memory()
    store.oxigraph.extend(tiny_quads)
    return store


@pytest.fixture
def tiny_store_path(tmp_path: Path, tiny_quads: list[ox.Quad]) -> Path:
    """An on-disk Oxigraph store folder holding the tiny store's quads (closed again)."""
    path = tmp_path / "store"
    store = ox.Store(str(path))
    store.extend(tiny_quads)
    store.flush()
    del store
    return path


@pytest.fixture
def tiny_endpoint(tmp_path: Path, tiny_quads: list[ox.Quad]) -> Iterator[str]:
    """``oxigraph serve`` on 127.0.0.1 over the tiny store's quads (the default graph their
    union, as in the embedded store); yields the query URL and stops the server after."""
    from tests.sparql_server import serve

    data = tmp_path / "tiny.nq"
    data.write_bytes(ox.serialize(tiny_quads, format=ox.RdfFormat.N_QUADS))
    with serve(data, tmp_path, union_default_graph=True) as url:
        yield url
