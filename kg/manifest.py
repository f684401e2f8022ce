"""The sources manifest (``kg/sources.toml``): what each source is and where its files are.

>>> m = load_manifest()
>>> m["schemaorg"].loader
'kg.owl'
>>> m["schemaorg"].license
'CC BY-SA 3.0'
>>> sorted(m)[2:5]
['copen', 'doid', 'foodon']
"""

from __future__ import annotations

import difflib
import hashlib
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kg import config
from kg.errors import SourceError

MANIFEST = Path(__file__).with_name("sources.toml")


@dataclass(frozen=True)
class SourceFile:
    path: str
    sha256: str | None = None


@dataclass(frozen=True)
class Source:
    """One entry of the manifest."""

    name: str
    title: str
    loader: str
    root: str
    format: str
    license: str
    url: str
    files: tuple[SourceFile, ...]
    options: dict[str, Any] = field(default_factory=dict)
    optional: bool = False  # built only when named (`-s NAME`), not by a plain build

    def root_dir(self, data_dir: Path | None = None) -> Path:
        if self.root == "wordnet":
            return config.wordnet_dir()
        return data_dir if data_dir is not None else config.data_dir()

    def resolve(self, data_dir: Path | None = None, verify: bool = True) -> list[Path]:
        """Absolute paths of the source's files; checks they exist and match their checksum."""
        root = self.root_dir(data_dir)
        paths = []
        for f in self.files:
            p = root / f.path
            kind = not_a_file(p)
            if kind:
                raise SourceError(f"source {self.name!r}: {p} is {kind}, not the data file; "
                                  f"put the file downloaded from {self.url} there instead.")
            if not p.is_file():
                hint = (
                    "install it with `apt-get install -y wordnet-base wordnet-sense-index` "
                    "or set KGPROBE_WORDNET_DIR"
                    if self.root == "wordnet"
                    else f"download it from {self.url} or point KGPROBE_DATA_DIR "
                    "(or --data-dir) at the folder that holds it"
                )
                raise SourceError(f"source {self.name!r}: file {p} is missing; {hint}.")
            if verify and f.sha256 and sha256(p) != f.sha256:
                raise SourceError(
                    f"source {self.name!r}: file {p} does not match its checksum in "
                    f"{MANIFEST.name} (expected sha256 {f.sha256}); the file is corrupt or a "
                    f"different release: download it again from {self.url}."
                )
            paths.append(p)
        return paths


def not_a_file(path: Path) -> str | None:
    """What ``path`` is when it exists but is no regular file (a FIFO, a device, a folder,
    a socket; a link is followed), else None (a regular file, or nothing there).

    >>> not_a_file(Path("/dev/null")), not_a_file(Path("/")), not_a_file(Path("/no/such"))
    ('a character device', 'a folder', None)
    """
    try:
        mode = path.stat().st_mode
    except OSError:
        return None  # missing (or a dangling link): reported as missing
    for test, kind in ((stat.S_ISREG, None), (stat.S_ISDIR, "a folder"),
                       (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a regular file"


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def load_manifest(path: Path = MANIFEST) -> dict[str, Source]:
    """Read the manifest into ``{name: Source}``."""
    raw = tomllib.loads(path.read_text(encoding="utf-8"))
    out = {}
    for name, entry in raw.items():
        files = tuple(SourceFile(**f) for f in entry.get("files", []))
        out[name] = Source(
            name=name,
            title=entry["title"],
            loader=entry["loader"],
            root=entry.get("root", "data"),
            format=entry["format"],
            license=entry["license"],
            url=entry["url"],
            files=files,
            options=dict(entry.get("options", {})),
            optional=bool(entry.get("optional", False)),
        )
    return out


def pick(names: list[str] | None, manifest: dict[str, Source] | None = None) -> list[Source]:
    """The sources named (when ``names`` is empty: all but the optional ones), with a "did you
    mean" on a typo.

    >>> "bear-big" in [s.name for s in pick(None)], [s.name for s in pick(["bear-big"])]
    (False, ['bear-big'])
    """
    manifest = manifest or load_manifest()
    if not names:
        return [s for s in manifest.values() if not s.optional]
    chosen = []
    for n in names:
        if n not in manifest:
            close = difflib.get_close_matches(n, manifest, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise SourceError(
                f"unknown source {n!r}.{hint} Known sources: {', '.join(sorted(manifest))}."
            )
        chosen.append(manifest[n])
    return chosen
