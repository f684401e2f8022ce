"""requirements.lock (written by scripts/lock.sh, installed by scripts/setup.sh) holds what
pyproject.toml declares: every dependency of kgprobe and its dev extra, no other direct one, each
at a version its range allows, every package with its hashes, torch at the pinned CPU build."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).parents[1]
DIRECT = "kgprobe (pyproject.toml)"  # how pip-compile annotates a dependency pyproject declares


def declared(pyproject: str) -> dict[str, Requirement]:
    """The dependencies of the project and of its dev extra, by canonical name."""
    project = tomllib.loads(pyproject)["project"]
    lines = project["dependencies"] + project["optional-dependencies"]["dev"]
    return {canonicalize_name(r.name): r for r in map(Requirement, lines)}


def locked(lock: str) -> dict[str, tuple[Version, int, bool]]:
    """Each pinned package of a pip-compile lock: (version, number of hashes, whether pyproject
    declares it), by canonical name."""
    out: dict[str, tuple[Version, int, bool]] = {}
    for block in re.split(r"\n(?=\S)", lock):
        pin = re.match(r"([A-Za-z0-9._-]+)==(\S+)", block)
        if pin:
            out[canonicalize_name(pin[1])] = (Version(pin[2]), block.count("--hash=sha256:"),
                                              DIRECT in block)
    return out


def problems(pyproject: str, lock: str) -> list[str]:
    """What keeps ``lock`` from being the lock of ``pyproject`` (empty: none)."""
    wanted, pins = declared(pyproject), locked(lock)
    out = [f"{name} is declared in pyproject.toml but not in the lock" for name in wanted
           if name not in pins]
    out += [f"{name} is in the lock as a dependency pyproject.toml no longer declares"
            for name, (_, _, direct) in pins.items() if direct and name not in wanted]
    out += [f"{name}=={pins[name][0]} is outside pyproject.toml's {req}"
            for name, req in wanted.items()
            if name in pins and not req.specifier.contains(pins[name][0], prereleases=True)]
    out += [f"{name} has no hash" for name, (_, hashes, _) in pins.items() if not hashes]
    return out


def test_the_lock_holds_what_pyproject_declares() -> None:
    found = problems((ROOT / "pyproject.toml").read_text(),
                     (ROOT / "requirements.lock").read_text())
    assert not found, "; ".join(found) + ": run `bash scripts/lock.sh`"


def test_torch_is_the_pinned_cpu_build() -> None:
    version = locked((ROOT / "requirements.lock").read_text())["torch"][0]
    pins = [Requirement(line) for line in
            (ROOT / "scripts/lock-constraints.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")]
    assert [str(p) for p in pins] == ["torch==2.13.0"] and pins[0].specifier.contains(version)
    assert str(version) == "2.13.0+cpu"  # the local CPU wheel, not PyPI's CUDA build


PYPROJECT = """
[project]
dependencies = ["duckdb>=1.3", "torch>=2.3"]
[project.optional-dependencies]
dev = ["pytest>=8.0"]
"""
LOCK = """#    bash scripts/lock.sh
#
duckdb==1.5.6 \\
    --hash=sha256:73b1
    # via kgprobe (pyproject.toml)
iniconfig==2.1.0 \\
    --hash=sha256:9dea
    # via pytest
pytest==9.0.1 \\
    --hash=sha256:1f2a
    # via kgprobe (pyproject.toml)
torch==2.13.0+cpu \\
    --hash=sha256:6746
    # via
    #   -c scripts/lock-constraints.txt
    #   kgprobe (pyproject.toml)
"""


def test_the_check_finds_each_kind_of_mismatch() -> None:
    assert problems(PYPROJECT, LOCK) == []
    added = PYPROJECT.replace('"torch>=2.3"', '"torch>=2.3", "polars>=1.0"')
    assert problems(added, LOCK) == ["polars is declared in pyproject.toml but not in the lock"]
    dropped = PYPROJECT.replace(', "torch>=2.3"', "")
    assert problems(dropped, LOCK) == [
        "torch is in the lock as a dependency pyproject.toml no longer declares"]
    raised = PYPROJECT.replace("duckdb>=1.3", "duckdb>=1.6")
    assert problems(raised, LOCK) == ["duckdb==1.5.6 is outside pyproject.toml's duckdb>=1.6"]
    unhashed = LOCK.replace("iniconfig==2.1.0 \\\n    --hash=sha256:9dea", "iniconfig==2.1.0")
    assert problems(PYPROJECT, unhashed) == ["iniconfig has no hash"]
