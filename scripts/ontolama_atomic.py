"""Write the seven OntoLAMA Atomic SI probe files from one template.

    .venv/bin/python scripts/ontolama_atomic.py           # (re)write queries/ontolama/*-atomic*.rq
    .venv/bin/python scripts/ontolama_atomic.py --check   # exit 1 when a file differs

The five ontologies' ``queries/ontolama/<onto>-atomic.rq`` and the two shortcut-controlled
``<onto>-atomic-controlled.rq`` (docs/shortcuts.md) are one query: they differ only in the
ontology's graph, its name in the comments, the split ratios (He et al. 2023, section 4.1:
8:1:1, Schema.org 2:1:7), the measured run time, the hash-bucket widths that keep the negative
sampling fast on large ontologies, and the ``control`` of the controlled files. The query is
``scripts/ontolama_atomic.rq.in`` (``string.Template``: ``$name`` placeholders), the
differences are :data:`FILES`. ``tests/test_ontolama.py`` checks that every file equals this
script's output, so an edit goes into the template, never into one copy.
"""

from __future__ import annotations

import argparse
import string
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = Path(__file__).with_name("ontolama_atomic.rq.in")
FOLDER = ROOT / "queries" / "ontolama"
PAPER_SPLITS = "train: 0.8, dev: 0.1, test: 0.1"
CONTROL_NOTE = ", shortcut-controlled split (no super-class in two splits; docs/shortcuts.md)"


@dataclass(frozen=True)
class AtomicFile:
    ontology: str          # the graph and the builder's ontology key
    title: str             # how the comments name it
    runtime: str           # measured, for the comment
    soft_digits: int       # hex digits of the soft negatives' hash buckets
    hard_digits: int = 0   # ... and of the hard negatives'
    splits: str = PAPER_SPLITS
    controlled: bool = False

    @property
    def path(self) -> Path:
        return FOLDER / f"{self.ontology}-atomic{'-controlled' if self.controlled else ''}.rq"

    def text(self, template: str) -> str:
        return string.Template(template).substitute(
            ontology=self.ontology, title=self.title, runtime=self.runtime,
            soft_digits=self.soft_digits, hard_digits=self.hard_digits, splits=self.splits,
            suffix="-controlled" if self.controlled else "",
            control=", control: super_class" if self.controlled else "",
            control_note=CONTROL_NOTE if self.controlled else "")


_SCHEMAORG = "train: 0.2, dev: 0.1, test: 0.7"
FILES = (
    AtomicFile("pizza", "the Pizza ontology", "0.2 s", 0),
    AtomicFile("pizza", "the Pizza ontology", "0.2 s", 0, controlled=True),
    AtomicFile("schemaorg", "Schema.org", "2 s", 1, splits=_SCHEMAORG),
    AtomicFile("schemaorg", "Schema.org", "2 s", 1, splits=_SCHEMAORG, controlled=True),
    AtomicFile("go", "the GO subset", "5 s", 2),
    AtomicFile("doid", "DOID", "15 s", 2, hard_digits=1),
    AtomicFile("foodon", "the FoodOn subset", "30 s", 2),
)


def expected() -> dict[Path, str]:
    """Each file's path and the text the template gives it."""
    template = TEMPLATE.read_text(encoding="utf-8")
    return {f.path: f.text(template) for f in FILES}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when a file differs from the template's")
    args = parser.parse_args(argv)
    stale = [p for p, text in expected().items()
             if not p.is_file() or p.read_text(encoding="utf-8") != text]
    if args.check:
        for p in stale:
            print(f"{p.relative_to(ROOT)} differs from {TEMPLATE.relative_to(ROOT)}: run "
                  f"python scripts/ontolama_atomic.py", file=sys.stderr)
        return 1 if stale else 0
    for p, text in expected().items():
        p.write_text(text, encoding="utf-8")
    print(f"wrote {len(FILES)} files ({len(stale)} changed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
