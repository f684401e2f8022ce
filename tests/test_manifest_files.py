"""A data file that kg/sources.toml lists and that is there but is no regular file (a FIFO, a
link to a device, a folder) is named for what it is, not reported as missing (issue 45 point
7); reading it would block (a FIFO) or never end (/dev/zero)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kg.errors import SourceError
from kg.manifest import load_manifest


@pytest.mark.parametrize(("make", "kind"), [
    (lambda p: os.mkfifo(p), "a FIFO (named pipe)"),
    (lambda p: p.symlink_to("/dev/zero"), "a character device"),
    (lambda p: p.mkdir(), "a folder")])
def test_a_data_file_that_is_no_file_is_named(tmp_path: Path, make: object, kind: str) -> None:
    source = load_manifest()["bear"]
    first = tmp_path / source.files[0].path
    first.parent.mkdir(parents=True)
    make(first)  # type: ignore[operator]
    with pytest.raises(SourceError) as e:
        source.resolve(tmp_path)
    assert str(e.value) == (f"source 'bear': {first} is {kind}, not the data file; put the "
                            f"file downloaded from {source.url} there instead.")


def test_a_missing_file_is_still_missing(tmp_path: Path) -> None:
    source = load_manifest()["bear"]
    with pytest.raises(SourceError, match=r"is missing; download it from"):
        source.resolve(tmp_path)
