"""The probe library installs: a wheel built from the repository carries ``queries/**/*.rq``,
``queries/**/*.yaml`` and eval's ``*.sql`` metrics, and the installed code finds them.

The wheel is built offline from a copy of the working tree (``pip wheel --no-deps
--no-build-isolation``) and installed with ``--no-deps`` into a fresh venv whose dependencies
come from this interpreter's site-packages (a ``.pth`` file); the commands then run from a
folder outside the repository, without PYTHONPATH.
"""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]
IGNORE = shutil.ignore_patterns(".git", ".venv", ".kgprobe", "build", "dist", "__pycache__",
                                "*.egg-info", ".pytest_cache", ".ruff_cache")


def _run(*cmd: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"{cmd}: {done.stdout}\n{done.stderr}"
    return done.stdout


def test_installed_wheel_lists_the_probes(tmp_path: Path) -> None:
    # no PYTHONPATH: pip and the installed command must not see the checkout
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "KGPROBE_QUERIES", "VIRTUAL_ENV")}
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=IGNORE)
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", tmp_path / "wheel", src, cwd=tmp_path)
    (wheel,) = (tmp_path / "wheel").glob("kgprobe-*.whl")

    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path)
    py = venv / "bin" / "python"
    purelib = Path(_run(py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))",
                        cwd=tmp_path).strip())
    _run(sys.executable, "-m", "pip", "--python", py, "install", "--no-deps", "-q", wheel,
         cwd=tmp_path, env=env)
    # then the dependencies from this environment, after the venv's own site-packages (added
    # after the install, or pip would take its editable kgprobe for the one to install)
    (purelib / "_shared_deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = _run(py, "-c", "import probes, eval; print(probes.__file__, eval.__file__)",
                 cwd=elsewhere, env=env)
    assert where.count(str(purelib)) == 2, where  # the installed copy, not the checkout

    listed = _run(venv / "bin" / "kgprobe", "list", cwd=elsewhere, env=env)
    expected = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "queries").rglob("*.rq")
                      if "derived" not in p.parts and "construct" not in p.parts)
    files = sorted(Path(line.split()[2]).relative_to(purelib).as_posix()
                   for line in listed.splitlines())
    assert files == expected
    assert listed == _run(py, "-m", "probes.engine.export", "--list", cwd=elsewhere, env=env)

    # the data files the code reads by path: eval's metrics, derived queries, shared vocabulary
    check = ("from eval.sqlfile import discover_metrics\n"
             "from kg.derived import DERIVED_DIR\n"
             "from probes.benchmarks.semrel import SHARED_VOCAB\n"
             "print(len(discover_metrics()), len(list(DERIVED_DIR.glob('*.rq'))), "
             "SHARED_VOCAB.is_file())")
    shipped = len([p for p in (ROOT / "eval" / "metrics").glob("*.sql")
                   if not p.name.startswith("_")])
    derived = len(list((ROOT / "queries" / "derived").glob("*.rq")))
    assert _run(py, "-c", check, cwd=elsewhere, env=env).split() == [str(shipped), str(derived),
                                                                     "True"]
