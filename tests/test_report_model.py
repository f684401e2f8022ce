"""One report model, two renderers (issue 43 point 5): eval.report_model builds what a report
holds; eval.report (Markdown) and eval.html_report (HTML) both import it, and html_report
never imports eval.report (the import cycle of the two is gone)."""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imports(module: str) -> set[str]:
    """Every module a file of eval/ imports statically (inside functions too)."""
    tree = ast.parse((ROOT / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


def test_both_renderers_import_the_model_and_html_never_imports_report() -> None:
    html, md, model = (_imports(m) for m in ("eval.html_report", "eval.report",
                                             "eval.report_model"))
    assert "eval.report_model" in html and "eval.report_model" in md
    assert "eval.report" not in html
    assert not {"eval.report", "eval.html_report"} & model


def test_the_import_graph_has_no_cycle_through_the_renderers() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import_graph = importlib.import_module("import_graph")
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    cycles = import_graph.cycles(import_graph.edges(ROOT, module_level_only=False))
    assert not [c for c in cycles if "eval.report" in c or "eval.html_report" in c], cycles
