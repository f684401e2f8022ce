"""The ``builder:`` header field: a Python function makes the instances from the query.

A builder is one of kgprobe's own or a module file under a probe folder the user passed; here
the checkout's root plays that folder, so ``tests.test_builder`` is this file."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from kg.store import LocalStore
from probes.engine.errors import ProbeFileError
from probes.engine.export import build_instances, instances_for
from probes.engine.spec import Probe, parse_probe

ROOT = Path(__file__).parents[1]
HEADER = """# name: demo/built
# task: records
# split: test
# target: ?w
# builder: {builder}
SELECT ?w WHERE {{ VALUES ?w {{ "a" "b" "c" }} }}
"""


def first_two(probe: Probe, store: LocalStore) -> pl.DataFrame:
    """A builder for the test: the query's instances, cut to the first two."""
    return instances_for(probe, store).head(2)


def test_builder_makes_the_instances() -> None:
    probe = parse_probe(HEADER.format(builder="tests.test_builder:first_two"), "built.rq")
    store = LocalStore.in_memory()
    assert instances_for(probe, store).height == 3
    assert build_instances(probe, store, builder_dirs=[ROOT])["target"].to_list() == ["a", "b"]


def test_unknown_builder_names_file_and_line(tmp_path: Path) -> None:
    probe = parse_probe(HEADER.format(builder="tests.test_builder:no_such"), "built.rq")
    with pytest.raises(ProbeFileError) as err:
        build_instances(probe, LocalStore.in_memory(), builder_dirs=[ROOT])
    assert str(err.value).startswith("built.rq:5: builder 'tests.test_builder:no_such'")
    assert "has no function 'no_such'" in str(err.value)


def test_malformed_builder_is_a_header_error() -> None:
    with pytest.raises(ProbeFileError, match=r"built.rq:5: builder"):
        parse_probe(HEADER.format(builder="not a function"), "built.rq")
