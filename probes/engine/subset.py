"""A benchmark's probe file restricted to some relations and their first N items: the one writer
behind ``kgprobe bear subset`` and ``kgprobe pararel subset`` (a subset is data, a probe file
to export and run with ``--queries DIR``, not an option of the run).

- :func:`subset_text`: the base probe file renamed (``# name:``) and restricted by two FILTER
  lines put after its anchor line (the line that binds ``?relation``; ``?index`` is the item's
  place in its relation's file); a FILTER on ``?index`` the base already has is replaced;
- :func:`check_count`: the ``--facts`` / ``--instances`` value (at least 1);
- :func:`write_subset`: checks the text as a probe file, then writes ``DIR/NAME.rq`` (``/`` in
  the name as ``_``) and says how to export and run it; every refusal is one
  :class:`ProbeError` line naming the option to change.

>>> anchor = "    ?r kgp:code ?relation .\\n"
>>> base = "# name: b/all\\n# task: choice\\n" + anchor + "    FILTER(?index < 2)\\n"
>>> print(subset_text(base, "b/mine", anchor, ["P19"], 10, "b/all"))
# name: b/mine
# task: choice
    ?r kgp:code ?relation .
    FILTER(?relation IN ("P19"))
    FILTER(?index < 10)
<BLANKLINE>
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from kg.manifest import not_a_file
from probes.engine.errors import ProbeError
from probes.engine.spec import parse_probe

_NAME = re.compile(r"(?m)^# name: .*$")
_INDEX_FILTER = re.compile(r"(?m)^    FILTER\(\?index < \d+\)\n")


def subset_text(base: str, name: str, anchor: str, relations: Sequence[str],
                first: int | None, shapes: str) -> str:
    """``base`` renamed to ``name`` and restricted to ``relations`` (Wikidata codes; none: all)
    and to each relation's first ``first`` items (None: all), the FILTER lines put after
    ``anchor``; an error when ``base`` has no anchor or no ``# name:`` line (``shapes``: the
    probe files to start from instead) or a code is not like P19."""
    if anchor not in base or not _NAME.search(base):
        raise ProbeError(f"the base probe file has not the shape of {shapes} (no "
                         f"{anchor.strip()!r} line or no name:); start from one of {shapes}")
    for code in relations:
        if not re.fullmatch(r"P\d+", code):
            raise ProbeError(f"--relation {code!r} is not a Wikidata property code like P19")
    extra = ""
    if relations:
        extra += f"    FILTER(?relation IN ({', '.join(json.dumps(c) for c in relations)}))\n"
    if first is not None:
        base = _INDEX_FILTER.sub("", base)
        extra += f"    FILTER(?index < {int(first)})\n"
    text = _NAME.sub(f"# name: {name}", base, count=1)
    return text.replace(anchor, anchor + extra, 1)


def check_count(value: int | None, option: str) -> None:
    """Refuse a count under 1 (``option``: ``--facts``, ``--instances``).

    >>> check_count(0, "--facts")
    Traceback (most recent call last):
    ...
    probes.results.ProbeError: --facts must be at least 1
    """
    if value is not None and value < 1:
        raise ProbeError(f"{option} must be at least 1")


def write_subset(text: str, name: str, out: Path) -> Path:
    """Write ``text`` as ``out/<name with / as _>.rq`` once it parses as a probe file (its
    header and query checked before anything is written); returns the path and prints how to
    export and run it. ``out`` is made if missing; a file there that is no folder, or a
    non-regular file (a FIFO would block) at the path, is refused in one line."""
    path = out / (name.replace("/", "_") + ".rq")
    parse_probe(text, path)
    if out.exists() and not out.is_dir():
        raise ProbeError(f"--out {out} is not a folder; give the folder to write "
                         f"{path.name} into")
    kind = not_a_file(path)
    if kind:
        raise ProbeError(f"{path} is {kind}; remove it or give another --out or --name")
    try:
        out.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as e:
        raise ProbeError(f"cannot write {path}: {e.strerror or e}; give another --out") from None
    print(f"wrote {path}; export and score it with `kgprobe --queries {out} export -p "
          f"{name}` and `kgprobe --queries {out} run -m MODEL -p {name}`")
    return path
