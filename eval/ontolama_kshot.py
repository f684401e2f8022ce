"""The OntoLAMA report's K-shot part (He et al. 2023, section 4.3): the protocol table (the mean
± std over the 18 runs of each model, dataset and K), the per-prompt table, the curves of
accuracy against K (zero-shot as K = 0) with the majority class and the shortcut ceiling, and
their plots. The rest of the report: :mod:`eval.ontolama_report`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eval.ontolama_results import (
    FULL_K,
    Results,
    baselines,
    ceiling_cell,
    ceiling_rows,
    dataset,
    mean_std,
    pct,
    probe_order,
)
from eval.plots import line_chart


def _zero_shot_at(res: Results, model: str, probe: str, template: str, label_set: str
                  ) -> tuple[float, int] | None:
    """The zero-shot accuracy and n of one template x label set (the largest run)."""
    acc = [(r["n"], r["value"]) for r in res.rows("ontolama_accuracy")
           if (info := res.runs.get(r["run_id"])) and info.kshot is None
           and info.model == model and info.probe == probe
           and (r["template"], r["label_set"]) == (template, label_set)]
    if not acc:
        return None
    n, value = max(acc)
    return value, n


def _kshot_baseline(res: Results, row: dict[str, Any]) -> float | None:
    base = baselines(res)
    for info in res.runs.values():
        k = info.kshot or {}
        if (info.model, info.probe, k.get("k"), k.get("template"), k.get("label_set")) == (
                row["model"], row["probe"], row["k"], row["template"], row["label_set"]) \
                and info.run_id in base:
            return base[info.run_id]["value"]
    return None


def _kshot_ceiling(res: Results, row: dict[str, Any]) -> dict[str, Any] | None:
    """The best shortcut ceiling among the K-shot runs of a row (model, probe, K and, where the
    row has them, template and label set); runs on the same test instances share one."""
    ceiling = ceiling_rows(res)
    found = [ceiling[i.run_id] for i in res.runs.values() if i.run_id in ceiling
             and (i.model, i.probe, (i.kshot or {}).get("k")) == (row["model"], row["probe"],
                                                                   row["k"])
             and all((i.kshot or {}).get(f) == row[f] for f in ("template", "label_set")
                     if f in row)]
    return max(found, key=lambda c: c["value"]) if found else None


def _kshot_rows(res: Results) -> list[dict[str, Any]]:
    return sorted(res.rows("ontolama_kshot"),
                  key=lambda r: (r["model"], *probe_order(r["probe"]), r["template"],
                                 r["label_set"], *_k_order(r["k"])))


def _k_order(k: int) -> tuple[bool, int]:
    """K ascending, the fully supervised setting (K = -1) last, as the paper's Table 7."""
    return k == FULL_K, k


def _k_label(k: int) -> str:
    return "full" if k == FULL_K else str(k)


def kshot_table(res: Results) -> str:
    """K-shot accuracy (%), mean ± std over seeds, beside zero-shot on the same prompt."""
    rows = _kshot_rows(res)
    if not rows:
        return "No K-shot runs."
    models = {r["model"] for r in rows}
    head = (["model"] if len(models) > 1 else []) + [
        "dataset", "K", "prompt", "accuracy", "seeds", "n", "zero-shot (n)", "majority",
        "shortcut ceiling"]
    align = ["---"] * (len(models) > 1) + ["---", "---:", "---"] + ["---:"] * 6
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"]
    for r in rows:
        zs = _zero_shot_at(res, r["model"], r["probe"], r["template"], r["label_set"])
        cells = ([r["model"]] if len(models) > 1 else []) + [
            dataset(r["probe"]), _k_label(r["k"]), f"{r['template']} {r['label_set']}",
            mean_std(r["value"], r["std"], r["seeds"]), str(r["seeds"]), f"{r['n']:,}",
            f"{pct(zs[0])} ({zs[1]:,})" if zs else "–", pct(_kshot_baseline(res, r)),
            ceiling_cell(_kshot_ceiling(res, r))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _protocol_rows(res: Results) -> list[dict[str, Any]]:
    return sorted(res.rows("ontolama_kshot_protocol"),
                  key=lambda r: (r["model"], *probe_order(r["probe"]), *_k_order(r["k"])))


def protocol_table(res: Results) -> str:
    """The paper's K-shot protocol: mean ± std over all runs per dataset and K."""
    rows = _protocol_rows(res)
    if not rows:
        return "No K-shot runs."
    lines = ["| model | dataset | K | accuracy (mean ± std over runs) | runs | test n | "
             "of split | zero-shot (mean of 6) | shortcut ceiling |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        zs = _zero_shot_mean(res, r["model"], r["probe"])
        size = res.sizes.get((r["probe"], res.split), 0)
        k = _k_label(r["k"])
        lines.append(f"| {r['model']} | {dataset(r['probe'])} | {k} | "
                     f"{mean_std(r['value'], r['std'], r['runs'])} | {r['runs']} | "
                     f"{r['n']:,}{' (sample)' if r['n'] < size else ''} | {size:,} | "
                     f"{pct(zs[0]) if zs else '–'} | "
                     f"{ceiling_cell(_kshot_ceiling(res, r))} |")
    return "\n".join(lines)


def _zero_shot_mean(res: Results, model: str, probe: str) -> tuple[float, float] | None:
    """(mean, std) over the six prompts of the largest zero-shot run of a model on a probe."""
    rows = [(r["n"], r["value"], r["std"]) for r in res.rows("ontolama_zero_shot")
            if (info := res.runs.get(r["run_id"])) and info.model == model
            and info.probe == probe]
    if not rows:
        return None
    _, value, std = max(rows)
    return value, std


def kshot_curves(res: Results) -> dict[str, list[tuple[float, float, float | None]]]:
    """Per dataset (and model when there are several): (K, mean accuracy, std over runs), the
    zero-shot mean over the six prompts drawn as K = 0 (the fully supervised setting is left
    out of the curve)."""
    rows = [r for r in _protocol_rows(res) if r["k"] > 0]
    models = {r["model"] for r in rows}
    out: dict[str, list[tuple[float, float, float | None]]] = {}
    for r in rows:
        name = dataset(r["probe"]) if len(models) == 1 else f"{r['model']}: {dataset(r['probe'])}"
        if name not in out:
            zs = _zero_shot_mean(res, r["model"], r["probe"])
            out[name] = [(0, zs[0], zs[1])] if zs else []
        out[name].append((r["k"], r["value"], r["std"] if r["runs"] > 1 else None))
    return out


def kshot_baselines(res: Results) -> dict[str, float]:
    """The majority-class baseline of the K-shot test sets (balanced: 50 %)."""
    bases = {_kshot_baseline(res, r) for r in _kshot_rows(res)} - {None}
    if not bases:
        return {}
    return {"majority class": max(b for b in bases if b is not None)}


def kshot_ceilings(res: Results) -> dict[str, float]:
    """Per curve of :func:`kshot_curves`: the shortcut ceiling of its K-shot test instances
    (the best over its runs), drawn as a second dashed line in the curve's colour."""
    rows = [r for r in _protocol_rows(res) if r["k"] > 0]
    models = {r["model"] for r in rows}
    out: dict[str, float] = {}
    for r in rows:
        name = dataset(r["probe"]) if len(models) == 1 else f"{r['model']}: {dataset(r['probe'])}"
        c = _kshot_ceiling(res, r)
        if c is not None:
            out[name] = max(out.get(name, 0.0), float(c["value"]))
    return out


def kshot_plot(res: Results, path: Path) -> Path | None:
    """The K-shot curve PNG (None when there are no K-shot runs)."""
    curves = kshot_curves(res)
    if not curves:
        return None
    return line_chart(curves, f"OntoLAMA K-shot ({res.split}, mean ± std)",
                      path, xlabel="K (examples per class; 0 = zero-shot)", ylabel="accuracy",
                      baselines=kshot_baselines(res), series_baselines=kshot_ceilings(res),
                      series_baseline_label="shortcut ceiling")


def kshot_prompt_curves(res: Results) -> dict[str, list[tuple[float, float, float | None]]]:
    """Per dataset and prompt (template x label set) with runs at two or more K: (K, mean
    accuracy, std over seeds), that prompt's own zero-shot accuracy drawn as K = 0 (the fully
    supervised setting is left out). The like-for-like curve when the protocol is partial: a
    split run on one prompt at several K is compared with another split on the same prompt,
    where :func:`kshot_curves` would mix one prompt's runs at one K with all six at another."""
    rows = [r for r in _kshot_rows(res) if r["k"] > 0]
    models = {r["model"] for r in rows}
    keys = [(r["model"], r["probe"], r["template"], r["label_set"]) for r in rows]
    out: dict[str, list[tuple[float, float, float | None]]] = {}
    for key, r in zip(keys, rows, strict=True):
        if keys.count(key) < 2:
            continue
        name = (f"{dataset(r['probe'])} {r['template']} {r['label_set']}" if len(models) == 1
                else f"{r['model']}: {dataset(r['probe'])} {r['template']} {r['label_set']}")
        if name not in out:
            zs = _zero_shot_at(res, r["model"], r["probe"], r["template"], r["label_set"])
            out[name] = [(0, zs[0], None)] if zs else []
        out[name].append((r["k"], r["value"], r["std"] if r["seeds"] > 1 else None))
    return out


def kshot_prompt_ceilings(res: Results) -> dict[str, float]:
    """Per curve of :func:`kshot_prompt_curves`: the best shortcut ceiling of its runs' test
    instances."""
    names = kshot_prompt_curves(res)
    models = {r["model"] for r in _kshot_rows(res)}
    out: dict[str, float] = {}
    for r in _kshot_rows(res):
        name = (f"{dataset(r['probe'])} {r['template']} {r['label_set']}" if len(models) == 1
                else f"{r['model']}: {dataset(r['probe'])} {r['template']} {r['label_set']}")
        c = _kshot_ceiling(res, r)
        if name in names and r["k"] > 0 and c is not None:
            out[name] = max(out.get(name, 0.0), float(c["value"]))
    return out


def kshot_prompt_plot(res: Results, path: Path) -> Path | None:
    """The per-prompt K-shot curve PNG (None when no prompt has runs at two K)."""
    curves = kshot_prompt_curves(res)
    if not curves:
        return None
    return line_chart(curves, f"OntoLAMA K-shot per prompt ({res.split})", path,
                      xlabel="K (examples per class; 0 = zero-shot)",
                      ylabel="accuracy (mean ± std over seeds)",
                      baselines=kshot_baselines(res), series_baselines=kshot_prompt_ceilings(res),
                      series_baseline_label="shortcut ceiling")
