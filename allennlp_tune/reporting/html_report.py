"""
The answer at a glance: tune-report's HTML page with figures, and the same figures in one PNG.

`render_html(report_json)` writes ONE self-contained page: the report's tables, summary lines
and notes, and per task (one row of `render_json`'s `rows`: an encoder and a task) these
panels, each an inline SVG drawn by matplotlib (no scripts, fonts, stylesheets, images or URLs
outside the page, so it opens offline and can be mailed):

1. **Forest plot**: each mode's difference to the reference mode `fe` with its paired 95%
   interval (the row's `paired` entries, `PairedResult.as_dict()`), the zero line, and the
   difference, interval and verdict written beside it.
2. **Score versus training time** and 3. **score versus trainable parameters** (log x axes):
   one point per mode at the cell's mean score with its seed standard deviation as the y error
   bar (and the runs' cost range as the x error bar), the Pareto frontier (no other mode both
   cheaper and better) drawn as a line. Training time of a run is the sum of its `cost.json`
   `epoch_seconds` (else `mean_epoch_seconds` × `epochs`); a mode's time is the mean over its
   runs that recorded it; trainable parameters are the cell's `cost.trainable_params` mean.
4. **Learning curves**: `validation_<metric>` of every run's `metrics_epoch_<k>.json`, one
   thin line per seed, coloured by mode (×100 where the table shows percentages).
5. **Scalar-mix weights** of the `fe` runs: softmax of the `_scalar_mix.scalar_parameters.<i>`
   tensors in each run's `model.tar.gz` (`weights.th`, read with `torch.load(...,
   weights_only=True)` after copying that one member out of the archive; nothing is extracted
   by its path) or `best.th`, mean over seeds, per layer (the embedder's `layers` in
   `config.json` where it is a list, else 0, 1, ...: 0 = embeddings for `layers: "all"`).
6. **Per-layer probe**: when `probe_dirs` names an `allennlp probe` output for the task, its
   dev metric per layer (`probe.json`: `models.<pretrained|fine_tuned>.layers / scores`), drawn
   beside the mix weights (right axis).

`probe_dirs` maps `"<task>_<encoder>"` or `"<task>"` (the first that matches) to the
`--output-dir` of `allennlp probe` for that task (the folder holding `probe.json`) or to the
`probe.json` itself.

A panel that cannot be drawn is never left out: it is shown as a named box saying why ("no dev
predictions: intervals unavailable", "no cost.json in these runs", ...).

The learning curves and the mix weights are read from the run folders the JSON names (`runs[].
path`); everything else comes from the JSON alone. The data given to each figure is returned by
`forest_data`, `frontier_data`, `curve_data`, `mix_weights` and `probe_data`, and drawn by
`forest_figure`, `frontier_figure`, `curve_figure`, `mix_figure` (each returning a matplotlib
`Figure`); artists carry `gid`s (`g-<panel>-<task>_<encoder>-<mode>`) that the SVG keeps as
`id`s. `render_png(report_json, path)` lays out the same tables and panels in one PNG.

Pass `report=` (the `Report` the JSON came from) to use its tables, summary lines and notes as
they are; without it they are rebuilt from the JSON.
"""

import html
import io
import math
import re
import shutil
import statistics
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from allennlp_tune.reporting.report import (
    ANSWER_TITLE,
    ENCODER_TITLES,
    METRIC_TITLES,
    TASK_TITLES,
    Report,
    answer_lines,
    render_json,
)
from allennlp_tune.rundir import (
    ARCHIVE_NAME,
    CONFIG_NAME,
    COST_NAME,
    OK,
    PREDICTIONS_NAME,
    RUN_MODES,
    read_json,
)

REFERENCE = "fe"
PROBE_NAME = "probe.json"
WEIGHTS_MEMBER = "weights.th"
BEST_WEIGHTS = "best.th"
MODE_COLOURS = {
    "fe": "#1f77b4",
    "ft": "#d62728",
    "sf": "#ff7f0e",
    "bitfit": "#2ca02c",
    "lora": "#9467bd",
}
VERDICT_TIE = "tie"
PROBE_STYLES = {"pretrained": ("#444444", "o"), "fine_tuned": ("#d62728", "s")}

NO_PREDICTIONS = "no dev predictions: intervals unavailable"
NO_PAIRED = (
    "intervals unavailable: the report JSON has no paired results (made before tune-report "
    "computed them, or with --no-intervals)"
)
NO_COSTS = (
    f"no {COST_NAME} in these runs (trained before the tune_cost callback): costs unavailable"
)
NO_CURVES = "no metrics_epoch_*.json with the validation metric in these runs"
NO_FE = "no fe runs for this task"
NO_MIX_ARCHIVE = f"no {ARCHIVE_NAME} (or {BEST_WEIGHTS}) with a scalar mix in the fe runs"
NO_PROBE = (
    "no `allennlp probe` output for this task (tune-report --probe-dir TASK=DIR: the probe's "
    "--output-dir)"
)

_MIX_KEY = re.compile(r"^(?P<prefix>(?:.*\.)?_scalar_mix)\.scalar_parameters\.(?P<index>\d+)$")
_EPOCH_FILE = re.compile(r"^metrics_epoch_(\d+)\.json$")
_MIX_EMBEDDERS = ("tune_transformer", "tune_transformer_mismatched", "tune_elmo")


# ---- data ----------


def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def task_rows(report_json: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """The per-task rows of `render_json` (one encoder and task each)."""
    return [row for row in report_json.get("rows") or [] if isinstance(row, dict)]


def task_key(row: Mapping[str, Any]) -> str:
    """`sick_e_bert`: the part of every `gid` that names the task."""
    return f"{row.get('task')}_{row.get('encoder')}"


def task_title(row: Mapping[str, Any]) -> str:
    task, encoder = str(row.get("task")), str(row.get("encoder"))
    return f"{TASK_TITLES.get(task, task)} ({ENCODER_TITLES.get(encoder, encoder)})"


def used_modes(row: Mapping[str, Any]) -> List[str]:
    """The row's modes with runs, in `RUN_MODES` order (unknown modes after them)."""
    cells = row.get("cells") or {}
    used = [mode for mode, cell in cells.items() if isinstance(cell, dict) and cell.get("runs")]
    return [mode for mode in RUN_MODES if mode in used] + [
        mode for mode in used if mode not in RUN_MODES
    ]


def _as_percent(row: Mapping[str, Any]) -> bool:
    cells = [cell for cell in (row.get("cells") or {}).values() if cell.get("runs")]
    return all(cell.get("as_percent", True) for cell in cells)


def _metric_title(row: Mapping[str, Any]) -> str:
    return str(row.get("metric") or "score")


def forest_data(row: Mapping[str, Any], reference: str = REFERENCE) -> List[Dict[str, Any]]:
    """
    The forest plot's points: one per `paired` entry whose reference (`mode_b`) is `reference`,
    in `RUN_MODES` order: mode, reference, difference, low, high, verdict, metric, examples,
    seeds_a, seeds_b (as in the JSON). Empty when the row has no such entries.
    """
    points = []
    for entry in row.get("paired") or []:
        if not isinstance(entry, dict) or entry.get("mode_b") != reference:
            continue
        values = [_number(entry.get(key)) for key in ("difference", "low", "high")]
        if any(value is None for value in values):
            continue
        points.append(
            {
                "mode": entry.get("mode_a"),
                "reference": reference,
                "difference": values[0],
                "low": values[1],
                "high": values[2],
                "verdict": entry.get("verdict", ""),
                "metric": entry.get("metric"),
                "examples": entry.get("examples"),
                "seeds_a": entry.get("seeds_a"),
                "seeds_b": entry.get("seeds_b"),
            }
        )
    order = {mode: index for index, mode in enumerate(RUN_MODES)}
    return sorted(points, key=lambda point: order.get(point["mode"], len(RUN_MODES)))


def forest_missing_reason(row: Mapping[str, Any]) -> str:
    """Why there is no forest plot: no predictions, with how many runs of each mode have them."""
    counts = []
    for mode in used_modes(row):
        runs = row["cells"][mode]["runs"]
        with_predictions = sum(1 for run in runs if run.get("predictions"))
        counts.append(f"{mode} {with_predictions}/{len(runs)}")
    detail = f" (runs with {PREDICTIONS_NAME}: {', '.join(counts)})" if counts else ""
    notes = [str(note) for note in row.get("paired_notes") or []]
    detail += "".join(f"; {note}" for note in notes)
    if REFERENCE not in used_modes(row):
        return f"no {REFERENCE} runs to compare with{detail}"
    runs = [run for mode in used_modes(row) for run in row["cells"][mode]["runs"]]
    if not any(run.get("predictions") for run in runs):
        return NO_PREDICTIONS + detail
    if "paired" not in row:
        return NO_PAIRED + detail
    return "intervals unavailable" + detail  # the report's paired_notes say why


def run_seconds(cost: Optional[Mapping[str, Any]]) -> Optional[float]:
    """A run's training time: the sum of `epoch_seconds`, else `mean_epoch_seconds` × `epochs`."""
    if not isinstance(cost, Mapping):
        return None
    seconds = cost.get("epoch_seconds")
    if isinstance(seconds, list) and seconds:
        values = [_number(value) for value in seconds]
        if all(value is not None for value in values):
            return float(sum(values))  # type: ignore[arg-type]
    mean, epochs = _number(cost.get("mean_epoch_seconds")), _number(cost.get("epochs"))
    if mean is not None and epochs is not None:
        return mean * epochs
    return None


def frontier_data(row: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """
    One point per mode with a score: mode, score (the cell's mean), std (its seed std, 0 for
    one seed), n, scores (each scored run's), seconds / seconds_low / seconds_high (mean, min
    and max over the runs' training times; `None` where no run recorded one), params (the
    cell's `cost.trainable_params` mean) / params_low / params_high (over the runs).
    """
    points = []
    scale = 100.0 if _as_percent(row) else 1.0
    for mode in used_modes(row):
        cell = row["cells"][mode]
        mean = _number(cell.get("mean"))
        if mean is None:
            continue
        runs = cell.get("runs") or []
        seconds = [s for s in (run_seconds(run.get("cost")) for run in runs) if s is not None]
        params = [
            p
            for p in (_number((run.get("cost") or {}).get("trainable_params")) for run in runs)
            if p is not None
        ]
        cost = cell.get("cost") or {}
        mean_params = _number(cost.get("trainable_params"))
        if mean_params is None and params:
            mean_params = statistics.fmean(params)
        points.append(
            {
                "mode": mode,
                "score": mean,
                "std": _number(cell.get("std")) or 0.0,
                "n": cell.get("n"),
                "scores": [
                    run["value"] * scale
                    for run in runs
                    if run.get("status") == OK and _number(run.get("value")) is not None
                ],
                "seconds": statistics.fmean(seconds) if seconds else None,
                "seconds_low": min(seconds) if seconds else None,
                "seconds_high": max(seconds) if seconds else None,
                "params": mean_params,
                "params_low": min(params) if params else mean_params,
                "params_high": max(params) if params else mean_params,
            }
        )
    return points


def pareto_front(
    points: Sequence[Mapping[str, Any]], cost_key: str, higher_is_better: bool = True
) -> List[str]:
    """The modes no other mode beats on both cost (lower) and score, in increasing cost."""
    usable = [p for p in points if p.get(cost_key) is not None and p.get("score") is not None]
    sign = 1.0 if higher_is_better else -1.0
    ordered = sorted(usable, key=lambda p: (p[cost_key], -sign * p["score"]))
    front, best = [], -math.inf
    for point in ordered:
        if sign * point["score"] > best:
            front.append(point["mode"])
            best = sign * point["score"]
    return front


def read_curve(
    run_dir: Union[str, Path], metric: str, scale: float = 1.0
) -> Tuple[List[int], List[Optional[float]]]:
    """(epochs, values) of `validation_<metric>` in a run's `metrics_epoch_<k>.json`, by k."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        return [], []
    epochs = sorted(
        int(match.group(1))
        for match in (_EPOCH_FILE.match(path.name) for path in run_dir.iterdir())
        if match
    )
    values: List[Optional[float]] = []
    for epoch in epochs:
        metrics = read_json(run_dir / f"metrics_epoch_{epoch}.json") or {}
        value = _number(metrics.get(f"validation_{metric}"))
        values.append(None if value is None else value * scale)
    if all(value is None for value in values):
        return [], []
    return epochs, values


def curve_data(row: Mapping[str, Any]) -> Dict[str, List[Dict[str, Any]]]:
    """
    mode -> one entry per run with per-epoch files: seed, path, epochs, values (the validation
    metric ×100 where the table shows percentages; `None` for an epoch without it).
    """
    scale = 100.0 if _as_percent(row) else 1.0
    curves: Dict[str, List[Dict[str, Any]]] = {}
    for mode in used_modes(row):
        for run in row["cells"][mode]["runs"]:
            metric = run.get("metric")
            if not metric or not run.get("path"):
                continue
            epochs, values = read_curve(run["path"], metric, scale)
            if epochs:
                curves.setdefault(mode, []).append(
                    {"seed": run.get("seed"), "path": run["path"], "epochs": epochs,
                     "values": values}
                )  # fmt: skip
    return curves


def softmax(values: Sequence[float]) -> List[float]:
    top = max(values)
    exps = [math.exp(value - top) for value in values]
    total = sum(exps)
    return [value / total for value in exps]


def _load_weights(path: Path) -> Dict[str, Any]:
    from allennlp_tune.compat import load_weights

    try:  # memory-mapped: a frozen encoder's weights are not read, only the mix's few numbers
        return load_weights(str(path), map_location="cpu", mmap=True)
    except (RuntimeError, TypeError, ValueError):  # torch < 2.1 has no mmap
        return load_weights(str(path), map_location="cpu")


def read_scalar_mix(run_dir: Union[str, Path]) -> Tuple[Optional[Dict[str, List[float]]], str]:
    """
    The raw (pre-softmax) scalar-mix parameters of a run's model, `{prefix: [w_0, w_1, ...]}`,
    from `weights.th` in its `model.tar.gz` (only that regular-file member is copied out; links
    and other members are never extracted) or from `best.th`, loaded with
    `weights_only=True`. `(None, why)` when there are none.
    """
    run_dir = Path(run_dir)
    archive, best = run_dir / ARCHIVE_NAME, run_dir / BEST_WEIGHTS
    try:
        with tempfile.TemporaryDirectory(prefix="tune_mix_") as folder:
            if archive.is_file() and archive.stat().st_size > 0:
                target = Path(folder) / WEIGHTS_MEMBER
                with tarfile.open(archive, "r:gz") as tar:
                    member = next(
                        (
                            m
                            for m in tar
                            if (m.name[2:] if m.name.startswith("./") else m.name) == WEIGHTS_MEMBER
                        ),
                        None,
                    )
                    if member is None or not member.isreg():
                        return None, f"{archive}: no regular {WEIGHTS_MEMBER} member"
                    source = tar.extractfile(member)
                    if source is None:
                        return None, f"{archive}: {WEIGHTS_MEMBER} cannot be read"
                    with source, open(target, "wb") as handle:
                        shutil.copyfileobj(source, handle)
                state = _load_weights(target)
            elif best.is_file():
                state = _load_weights(best)
            else:
                return None, f"{run_dir}: no {ARCHIVE_NAME} or {BEST_WEIGHTS}"
            mixes: Dict[str, Dict[int, float]] = {}
            for key, tensor in state.items():
                match = _MIX_KEY.match(str(key))
                if match:
                    value = float(tensor.reshape(-1)[0])
                    mixes.setdefault(match["prefix"], {})[int(match["index"])] = value
    except Exception as error:  # a broken archive never stops the report
        return None, f"{run_dir}: cannot read the weights ({error.__class__.__name__}: {error})"
    if not mixes:
        return None, f"{run_dir}: the model has no scalar mix (a single layer?)"
    return {prefix: [values[i] for i in sorted(values)] for prefix, values in mixes.items()}, ""


def _mix_layers(config: Optional[Mapping[str, Any]], count: int) -> List[int]:
    """The layer of each mix weight: the mixing embedder's `layers` list, else 0..count-1."""
    found: List[Any] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if value.get("type") in _MIX_EMBEDDERS and "layers" in value:
                found.append(value["layers"])
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(config or {})
    for layers in found:
        if (
            isinstance(layers, list)
            and len(layers) == count
            and all(isinstance(layer, int) and layer >= 0 for layer in layers)
        ):
            return list(layers)
    return list(range(count))


def mix_weights(row: Mapping[str, Any]) -> Tuple[Optional[Dict[str, Any]], str]:
    """
    The learned scalar-mix weights of the row's scored fe runs: `({"layers", "weights" (softmax,
    mean over runs), "per_run" (each run's softmax), "paths", "prefix", "skipped" (runs without
    one, with why)}, "")`, or `(None, why)`.
    """
    cell = (row.get("cells") or {}).get(REFERENCE) or {}
    runs = [run for run in cell.get("runs") or [] if run.get("status") == OK and run.get("path")]
    if not runs:
        return None, NO_FE
    per_run, paths, skipped, layers, prefix = [], [], [], None, None
    for run in runs:
        mixes, why = read_scalar_mix(run["path"])
        if mixes is None:
            skipped.append(why)
            continue
        name = prefix if prefix in mixes else sorted(mixes)[0]
        weights = softmax(mixes[name])
        if per_run and len(weights) != len(per_run[0]):
            skipped.append(f"{run['path']}: {len(weights)} mix weights, others {len(per_run[0])}")
            continue
        prefix = name
        if layers is None:
            layers = _mix_layers(read_json(Path(run["path"]) / CONFIG_NAME), len(weights))
        per_run.append(weights)
        paths.append(run["path"])
    if not per_run:
        return None, NO_MIX_ARCHIVE + (f" ({skipped[0]})" if skipped else "")
    mean = [statistics.fmean(column) for column in zip(*per_run)]
    return {
        "layers": layers,
        "weights": mean,
        "per_run": per_run,
        "paths": paths,
        "prefix": prefix,
        "skipped": skipped,
    }, ""


def _probe_location(
    row: Mapping[str, Any], probe_dirs: Optional[Mapping[str, Union[str, Path]]]
) -> Optional[Path]:
    for key in (task_key(row), str(row.get("task"))):
        if probe_dirs and key in probe_dirs:
            path = Path(probe_dirs[key])
            return path / PROBE_NAME if path.is_dir() else path
    return None


def probe_data(path: Union[str, Path]) -> Tuple[Optional[Dict[str, Any]], str]:
    """
    `allennlp probe`'s `probe.json` (a file, or the folder holding it) as `({"metric", "probe",
    "models": {kind: {"layers", "scores"}}}, "")`, or `(None, why)`.
    """
    path = Path(path)
    if path.is_dir():
        path = path / PROBE_NAME
    loaded = read_json(path)
    if loaded is None:
        return None, f"{path}: missing or not a JSON object"
    models = {}
    for kind, model in (loaded.get("models") or {}).items():
        if not isinstance(model, dict):
            continue
        layers, scores = model.get("layers"), model.get("scores")
        if isinstance(layers, list) and isinstance(scores, list) and len(layers) == len(scores):
            models[kind] = {"layers": list(layers), "scores": [_number(s) for s in scores]}
    if not models:
        return None, f"{path}: no models with layers and scores"
    return {"metric": loaded.get("metric"), "probe": loaded.get("probe"), "models": models}, ""


# ---- figures ----------


def _new_figure(size: Tuple[float, float]):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=size, dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _colour(mode: str) -> str:
    return MODE_COLOURS.get(mode, "#555555")


def _signed(value: float, digits: int = 1) -> str:
    return f"{value:+.{digits}f}".replace(f"-{0:.{digits}f}", f"+{0:.{digits}f}")


def forest_text(point: Mapping[str, Any]) -> str:
    """`+1.2 [-0.3, +2.8] tie`, as `PairedResult.text`."""
    return (
        f"{_signed(point['difference'])} [{_signed(point['low'])}, {_signed(point['high'])}] "
        f"{point['verdict']}"
    )


def _errorbar_gids(container, gid: str) -> None:
    """Unique gids for an errorbar: `gid` on the marker, `gid-interval-<i>` on the bars, ..."""
    line, caps, bars = container.lines
    if line is not None:
        line.set_gid(gid)
    for index, cap in enumerate(caps):
        cap.set_gid(f"{gid}-cap-{index}")
    for index, bar in enumerate(bars):
        bar.set_gid(f"{gid}-interval-{index}")


def draw_forest(axes, points: Sequence[Mapping[str, Any]], key: str = "task") -> None:
    ys = list(range(len(points)))[::-1]
    for y, point in zip(ys, points):
        verdict = point["verdict"]
        colour = "#777777" if verdict == VERDICT_TIE else _colour(verdict)
        container = axes.errorbar(
            [point["difference"]],
            [y],
            xerr=[[point["difference"] - point["low"]], [point["high"] - point["difference"]]],
            fmt="o",
            color=colour,
            capsize=4,
        )
        _errorbar_gids(container, f"g-forest-{key}-{point['mode']}")
        axes.annotate(
            forest_text(point),
            xy=(1.0, y),
            xycoords=("axes fraction", "data"),
            xytext=(6, 0),
            textcoords="offset points",
            va="center",
            fontsize=9,
            color=colour,
            annotation_clip=False,
            gid=f"g-verdict-{key}-{point['mode']}",
        )
    axes.axvline(0.0, color="black", linewidth=0.8, gid=f"g-zero-{key}")
    axes.set_yticks(ys, [f"{p['mode']} − {p['reference']}" for p in points])
    axes.set_ylim(-0.7, len(points) - 0.3)
    low = min([p["low"] for p in points] + [0.0])
    high = max([p["high"] for p in points] + [0.0])
    pad = (high - low) * 0.08 or 1.0
    axes.set_xlim(low - pad, high + pad)
    metric = points[0].get("metric") if points else None
    axes.set_xlabel(f"difference in {METRIC_TITLES.get(metric or '', metric or 'score')} (points)")
    axes.grid(True, axis="x", alpha=0.3)


def forest_figure(points: Sequence[Mapping[str, Any]], key: str = "task"):
    """Differences to the reference with their paired intervals, zero line, verdict beside."""
    figure = _new_figure((5.4, 0.55 * len(points) + 1.3))
    draw_forest(figure.add_subplot(1, 1, 1), points, key)
    return figure


COSTS = {
    "seconds": ("training time (s, log)", "seconds_low", "seconds_high"),
    "params": ("trainable parameters (log)", "params_low", "params_high"),
}


def log_tick_label(value: float) -> str:
    """A log axis' tick, short: `0.5`, `20`, `500`, `2k`, `50k`, `1M`, `20M`."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:g}{suffix}"
    return f"{value:g}"


def draw_frontier(
    axes,
    points: Sequence[Mapping[str, Any]],
    cost_key: str,
    key: str = "task",
    higher_is_better: bool = True,
    ylabel: str = "dev score",
) -> None:
    from matplotlib import ticker

    label, low_key, high_key = COSTS[cost_key]
    usable = [p for p in points if p.get(cost_key) is not None]
    for point in usable:
        x = point[cost_key]
        low = point.get(low_key) if point.get(low_key) is not None else x
        high = point.get(high_key) if point.get(high_key) is not None else x
        container = axes.errorbar(
            [x],
            [point["score"]],
            yerr=[[point["std"]], [point["std"]]],
            xerr=[[x - low], [high - x]],
            fmt="o",
            color=_colour(point["mode"]),
            capsize=3,
            label=point["mode"],
        )
        _errorbar_gids(container, f"g-frontier-{cost_key}-{key}-{point['mode']}")
        axes.annotate(
            point["mode"],
            xy=(x, point["score"]),
            xytext=(5, 5),
            textcoords="offset points",
            fontsize=9,
            color=_colour(point["mode"]),
        )
    front = pareto_front(usable, cost_key, higher_is_better)
    by_mode = {p["mode"]: p for p in usable}
    xs = [by_mode[mode][cost_key] for mode in front]
    ys = [by_mode[mode]["score"] for mode in front]
    axes.plot(
        xs, ys, color="black", linewidth=1, linestyle="--", drawstyle="steps-post",
        label="Pareto frontier", gid=f"g-front-{cost_key}-{key}",
    )  # fmt: skip
    axes.set_xscale("log")
    xs_all = [p[cost_key] for p in usable]
    if xs_all and min(xs_all) > 0:
        axes.set_xlim(min(xs_all) / 2.5, max(xs_all) * 2.5)
    # Labels written short (500, 2k, 1M) at 1, 2 and 5 times a power of ten, or at the powers
    # only when the axis spans more than 2.5 decades; none on the minor ticks, whose default
    # labels (2x10^3, 3x10^3, ...) overlap when the range spans about one decade. The limits
    # span at least a factor 6.25, so at least two labelled ticks fall inside.
    low, high = axes.get_xlim()
    subs = (1.0,) if math.log10(high / low) > 2.5 else (1.0, 2.0, 5.0)
    axes.xaxis.set_major_locator(ticker.LogLocator(base=10, subs=subs))
    axes.xaxis.set_major_formatter(ticker.FuncFormatter(lambda value, _: log_tick_label(value)))
    axes.xaxis.set_minor_formatter(ticker.NullFormatter())
    axes.set_xlabel(label)
    axes.set_ylabel(ylabel)
    axes.grid(True, alpha=0.3)


def frontier_figure(
    points: Sequence[Mapping[str, Any]],
    cost_key: str,
    key: str = "task",
    higher_is_better: bool = True,
    ylabel: str = "dev score",
):
    """Score against `cost_key` ("seconds" or "params"), log x, seed spread, Pareto frontier."""
    figure = _new_figure((4.6, 3.3))
    draw_frontier(figure.add_subplot(1, 1, 1), points, cost_key, key, higher_is_better, ylabel)
    return figure


def draw_curves(
    axes, curves: Mapping[str, Sequence[Mapping[str, Any]]], key: str = "task", ylabel: str = ""
) -> None:
    for mode, runs in curves.items():
        for index, run in enumerate(runs):
            values = [math.nan if value is None else value for value in run["values"]]
            axes.plot(
                run["epochs"],
                values,
                color=_colour(mode),
                linewidth=0.9,
                alpha=0.8,
                marker="." if len(values) < 30 else None,
                label=mode if index == 0 else None,
                gid=f"g-curve-{key}-{mode}-{run.get('seed')}",
            )
    axes.set_xlabel("epoch")
    axes.set_ylabel(ylabel)
    axes.xaxis.get_major_locator().set_params(integer=True)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize=8)


def curve_figure(curves: Mapping[str, Sequence[Mapping[str, Any]]], key: str = "task",
                 ylabel: str = ""):  # fmt: skip
    """Validation metric per epoch, one thin line per seed, coloured by mode."""
    figure = _new_figure((4.6, 3.3))
    draw_curves(figure.add_subplot(1, 1, 1), curves, key, ylabel)
    return figure


def draw_mix(
    axes,
    mix: Optional[Mapping[str, Any]],
    probe: Optional[Mapping[str, Any]] = None,
    key: str = "task",
) -> None:
    handles = []
    if mix is not None:
        bars = axes.bar(
            mix["layers"],
            mix["weights"],
            color=_colour(REFERENCE),
            alpha=0.75,
            label=f"mix weight (mean of {len(mix['per_run'])})",
        )
        for layer, bar in zip(mix["layers"], bars):
            bar.set_gid(f"g-mix-{key}-{layer}")
        handles.append(bars)
        axes.set_ylabel("softmaxed scalar-mix weight")
        axes.set_ylim(0, max(mix["weights"]) * 1.25)
    probe_axes = axes.twinx() if (mix is not None and probe is not None) else axes
    if probe is not None:
        for kind, model in probe["models"].items():
            colour, marker = PROBE_STYLES.get(kind, ("#555555", "^"))
            values = [math.nan if value is None else value for value in model["scores"]]
            (line,) = probe_axes.plot(
                model["layers"],
                values,
                color=colour,
                marker=marker,
                linewidth=1.2,
                label=f"probe, {kind.replace('_', '-')}",
                gid=f"g-probe-{key}-{kind}",
            )
            handles.append(line)
        probe_axes.set_ylabel(f"probe dev {probe.get('metric') or 'score'}")
    layers = sorted(set((mix or {}).get("layers", [])) | {
        layer for model in (probe or {}).get("models", {}).values() for layer in model["layers"]
    })  # fmt: skip
    if layers and len(layers) <= 30:
        axes.set_xticks(layers)
    axes.set_xlabel("layer (0 = embeddings)")
    axes.grid(True, axis="y", alpha=0.3)
    if handles:
        axes.legend(handles=handles, fontsize=8, loc="upper left")


def mix_figure(
    mix: Optional[Mapping[str, Any]], probe: Optional[Mapping[str, Any]] = None, key: str = "task"
):
    """Mix weights per layer (bars) and, beside them on a right axis, the probe per layer."""
    figure = _new_figure((4.8, 3.3))
    draw_mix(figure.add_subplot(1, 1, 1), mix, probe, key)
    return figure


def draw_missing(axes, title: str, reason: str) -> None:
    import textwrap

    axes.set_axis_off()
    axes.text(
        0.5,
        0.95,
        f"{title}\n\n" + textwrap.fill(reason, 44),
        ha="center",
        va="top",
        fontsize=9,
        color="#555555",
        transform=axes.transAxes,
        bbox={"boxstyle": "round", "facecolor": "#f3f3f3", "edgecolor": "#bbbbbb"},
    )


# ---- panels ----------


@dataclass
class Panel:
    """One panel of a task: a title, and either a drawing function or why it is missing."""

    title: str
    caption: str = ""
    draw: Optional[Callable[[Any], None]] = None  # draws onto given axes
    size: Tuple[float, float] = (4.6, 3.3)
    missing: Optional[str] = None
    data_header: List[str] = field(default_factory=list)
    data_rows: List[List[str]] = field(default_factory=list)

    def figure(self):
        figure = _new_figure(self.size)
        axes = figure.add_subplot(1, 1, 1)
        if self.draw is None:
            draw_missing(axes, self.title, self.missing or "")
        else:
            self.draw(axes)
        return figure


def _fmt(value: Optional[float], digits: int = 2) -> str:
    if value is None:
        return "n/a"
    if abs(value) >= 1e5:
        return f"{value:.3g}"
    return f"{value:.{digits}f}"


def task_panels(
    row: Mapping[str, Any], probe_dirs: Optional[Mapping[str, Union[str, Path]]] = None
) -> List[Panel]:
    """The panels of one task row, in the page's order; missing ones say why."""
    key = task_key(row)
    metric = _metric_title(row)
    percent = _as_percent(row)
    higher_is_better = percent
    score_label = f"dev {metric}" + (" (×100)" if percent else "")
    panels = []

    forest = forest_data(row)
    title = f"Difference to {REFERENCE}, paired 95% interval"
    if forest:
        panels.append(
            Panel(
                title,
                "Each mode minus feature extraction on the same dev examples; the interval is "
                "a paired bootstrap over examples and seeds; the verdict is the mode it favours, "
                "or tie when it contains 0."
                + "".join(f" {note}." for note in row.get("paired_notes") or []),
                draw=lambda axes: draw_forest(axes, forest, key),
                size=(5.6, 0.55 * len(forest) + 1.4),
                data_header=["Mode", "Difference", "Low", "High", "Verdict", "Examples", "Seeds"],
                data_rows=[
                    [
                        f"{p['mode']} − {p['reference']}",
                        _fmt(p["difference"]),
                        _fmt(p["low"]),
                        _fmt(p["high"]),
                        str(p["verdict"]),
                        str(p["examples"]),
                        f"{p['seeds_a']} / {p['seeds_b']}",
                    ]
                    for p in forest
                ],  # fmt: skip
            )
        )
    else:
        panels.append(Panel(title, missing=forest_missing_reason(row)))

    points = frontier_data(row)
    for cost_key, name in (("seconds", "training time"), ("params", "trainable parameters")):
        title = f"Score versus {name}"
        usable = [p for p in points if p[cost_key] is not None]
        if not points:
            panels.append(Panel(title, missing="no scored runs"))
        elif not usable:
            panels.append(Panel(title, missing=NO_COSTS))
        else:
            front = pareto_front(usable, cost_key, higher_is_better)
            absent = [p["mode"] for p in points if p[cost_key] is None]
            panels.append(
                Panel(
                    title,
                    "One point per mode: mean over seeds ± their std; the dashed line is the "
                    "Pareto frontier ("
                    + ", ".join(front)
                    + ")."
                    + (f" Without costs: {', '.join(absent)}." if absent else ""),
                    draw=lambda axes, c=cost_key, u=usable: draw_frontier(
                        axes, u, c, key, higher_is_better, score_label
                    ),
                    data_header=["Mode", "Score", "Std", "n", name, "min", "max", "Frontier"],
                    data_rows=[
                        [
                            p["mode"],
                            _fmt(p["score"]),
                            _fmt(p["std"]),
                            str(p["n"]),
                            _fmt(p[cost_key], 1),
                            _fmt(p[COSTS[cost_key][1]], 1),
                            _fmt(p[COSTS[cost_key][2]], 1),
                            "yes" if p["mode"] in front else "",
                        ]
                        for p in points
                    ],  # fmt: skip
                )
            )

    curves = curve_data(row)
    title = "Learning curves"
    if curves:
        panels.append(
            Panel(
                title,
                f"Validation {metric} after each epoch; one thin line per seed.",
                draw=lambda axes: draw_curves(axes, curves, key, score_label),
                data_header=["Mode", "Seed", "Epochs", "Values"],
                data_rows=[
                    [
                        mode,
                        str(run["seed"]),
                        str(len(run["epochs"])),
                        ", ".join(_fmt(v) for v in run["values"]),
                    ]
                    for mode, runs in curves.items()
                    for run in runs
                ],  # fmt: skip
            )
        )
    else:
        panels.append(Panel(title, missing=NO_CURVES))

    mix, mix_why = mix_weights(row)
    location = _probe_location(row, probe_dirs)
    probe, probe_why = probe_data(location) if location is not None else (None, NO_PROBE)
    if mix is not None or probe is not None:
        title = "Scalar-mix weights (fe)" if mix is not None else "Per-layer probe"
        if mix is not None and probe is not None:
            title = "Scalar-mix weights (fe) and per-layer probe"
        header = ["Layer"] + (["Mix weight"] if mix is not None else [])
        kinds = list((probe or {}).get("models", {}))
        header += [f"Probe {kind}" for kind in kinds]
        layers = sorted(set((mix or {}).get("layers", [])) | {
            layer for kind in kinds for layer in probe["models"][kind]["layers"]  # type: ignore
        })  # fmt: skip
        rows = []
        for layer in layers:
            cells = [str(layer)]
            if mix is not None:
                weight = dict(zip(mix["layers"], mix["weights"])).get(layer)
                cells.append(_fmt(weight, 3))
            for kind in kinds:
                model = probe["models"][kind]  # type: ignore[index]
                cells.append(_fmt(dict(zip(model["layers"], model["scores"])).get(layer), 3))
            rows.append(cells)
        caption = (
            f"Softmaxed scalar-mix weights per layer, mean over {len(mix['per_run'])} fe run(s)."
            if mix is not None
            else ""
        )
        if probe is not None:
            caption += (
                f" Line: dev {probe.get('metric')} of a {probe.get('probe')} probe per layer."
            )
        panels.append(
            Panel(
                title,
                caption.strip(),
                draw=lambda axes: draw_mix(axes, mix, probe, key),
                size=(5.0, 3.3),
                data_header=header,
                data_rows=rows,
            )
        )
    if mix is None:
        panels.append(Panel("Scalar-mix weights (fe)", missing=mix_why))
    if probe is None:
        panels.append(Panel("Per-layer probe", missing=probe_why))
    return panels


# ---- SVG and HTML ----------

_SVG_START = re.compile(r"^.*?(?=<svg\b)", re.S)
_ID = re.compile(r'\bid="([^"]+)"')


def figure_svg(figure, prefix: str) -> str:
    """The figure as an inline `<svg>`: no XML prolog, DOCTYPE, metadata or namespace URLs, and
    its matplotlib ids prefixed with `prefix` (ours, `g-...`, kept) so that several figures can
    share a page."""
    import matplotlib

    buffer = io.StringIO()
    metadata = {"Date": None, "Creator": None, "Format": None, "Type": None}
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "allennlp-tune"}):
        figure.savefig(buffer, format="svg", metadata=metadata, bbox_inches="tight")
    svg = _SVG_START.sub("", buffer.getvalue(), count=1)
    svg = re.sub(r"<metadata>.*?</metadata>", "", svg, flags=re.S)
    svg = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", svg)
    svg = svg.replace("xlink:href=", "href=")
    ids = {name for name in _ID.findall(svg) if not name.startswith("g-")}

    def rename(match: "re.Match[str]") -> str:
        name = match.group(2)
        return match.group(1) + (prefix + name if name in ids else name) + match.group(3)

    svg = re.sub(r'(\bid="|href="#|url\(#)([^")]+)([")])', rename, svg)
    return svg.strip()


def _table_html(header: Sequence[str], rows: Sequence[Sequence[Any]], marks: bool = False) -> str:
    out = ["<table>", "<tr>" + "".join(f"<th>{html.escape(str(h))}</th>" for h in header) + "</tr>"]
    for row in rows:
        cells = []
        for cell in row:
            text, mark = cell if marks else (cell, None)
            attribute = f' class="{html.escape(mark)}"' if mark else ""
            cells.append(f"<td{attribute}>{html.escape(str(text))}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def json_tables(report_json: Mapping[str, Any]) -> List[Tuple[str, List[str], List[List[Any]]]]:
    """Without a `Report`: per encoder, the scores (with the verdicts) and costs, from the JSON."""
    tables = []
    by_encoder: Dict[str, List[Dict[str, Any]]] = {}
    for row in task_rows(report_json):
        by_encoder.setdefault(str(row.get("encoder")), []).append(row)
    for encoder, rows in by_encoder.items():
        modes = [m for m in RUN_MODES if any(m in used_modes(r) for r in rows)]
        header = ["Task", "Metric"] + [f"{m} (ours)" for m in modes] + ["Δ ft−fe"]
        header += [f"{p['mode']} vs {REFERENCE}" for p in _all_forest_modes(rows)]
        body = []
        for row in rows:
            cells = row.get("cells") or {}
            delta = _number(row.get("delta"))
            line = [TASK_TITLES.get(row["task"], row["task"]), _metric_title(row)]
            line += [(cells.get(m) or {}).get("text") or "—" for m in modes]
            line.append("—" if delta is None else _signed(delta))
            forest = {p["mode"]: p for p in forest_data(row)}
            line += [
                forest_text(forest[p["mode"]]) if p["mode"] in forest else "—"
                for p in _all_forest_modes(rows)
            ]
            body.append(line)
        title = ENCODER_TITLES.get(encoder, encoder)
        tables.append((title, header, body))
        cost_rows = []
        for row in rows:
            for mode in used_modes(row):
                cost = row["cells"][mode].get("cost") or {}
                if not cost.get("runs_with_costs"):
                    continue
                cost_rows.append(
                    [f"{TASK_TITLES.get(row['task'], row['task'])} {mode}",
                     _fmt(_number(cost.get("trainable_params")), 0),
                     _fmt(_number(cost.get("stored_params")), 0),
                     _fmt(_number(cost.get("mean_epoch_seconds")), 1),
                     _fmt(_number(cost.get("peak_rss_mb")), 0),
                     str(cost.get("runs_with_costs"))]
                )  # fmt: skip
        if cost_rows:
            tables.append(
                (f"{title}: costs (mean over runs)",
                 ["Cell", "Trainable params", "Stored params", "s/epoch", "Peak RSS MB",
                  "Runs with costs"], cost_rows)
            )  # fmt: skip
    others = report_json.get("others") or []
    if others:
        tables.append(
            ("Other runs (ablations, search trials, unrecognised names)",
             ["Run", "Metric", "Score"],
             [[o.get("label"), o.get("metric"), o.get("text")] for o in others])
        )  # fmt: skip
    return tables


def _all_forest_modes(rows: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    seen: Dict[str, Dict[str, Any]] = {}
    for row in rows:
        for point in forest_data(row):
            seen.setdefault(point["mode"], point)
    return list(seen.values())


def json_summary_lines(report_json: Mapping[str, Any]) -> List[str]:
    runs = [run for row in task_rows(report_json) for cell in row["cells"].values()
            for run in cell.get("runs") or []]  # fmt: skip
    runs += [run for other in report_json.get("others") or [] for run in other.get("runs") or []]
    split = report_json.get("split", "validation")
    return [
        f"{len(runs)} runs found in {', '.join(report_json.get('roots') or ['?'])}.",
        "Scores: "
        + ("best-epoch validation" if split == "validation" else "test")
        + " score of each run's primary metric, ×100, mean ± sample std over seeds.",
    ]


def json_notes(report_json: Mapping[str, Any]) -> List[Tuple[str, List[str]]]:
    problems = [
        f"{run.get('status')}: {run.get('path')}"
        + (f" ({run['detail']})" if run.get("detail") else "")
        for row in task_rows(report_json)
        for cell in row["cells"].values()
        for run in cell.get("runs") or []
        if run.get("status") != OK
    ]
    missing = [
        f"{path}: no costs ({COST_NAME})" for path in report_json.get("runs_without_costs") or []
    ]
    missing += [f"{path}: no {PREDICTIONS_NAME}"
                for path in report_json.get("runs_without_predictions") or []]  # fmt: skip
    sections = [("Runs without a score", problems),
                ("Scored runs without costs or dev predictions", missing)]  # fmt: skip
    return [(title, lines) for title, lines in sections if lines]


def _overlap_lines(row: Mapping[str, Any]) -> List[str]:
    lines = []
    for entry in row.get("overlap") or []:
        if isinstance(entry, dict):
            text = entry.get("text") or entry.get("reason") or entry.get("message")
            lines.append(str(text) if text else "; ".join(f"{k}: {v}" for k, v in entry.items()))
        else:
            lines.append(str(entry))
    return lines


STYLE = (
    "body{font-family:sans-serif;margin:1.2em;max-width:1500px;color:#222}"
    "table{border-collapse:collapse;margin:0.3em 0 1em 0;font-size:0.92em}"
    "td,th{border:1px solid #999;padding:3px 8px}th{background:#eee}"
    "td.ft{background:#f7c6a3}td.fe{background:#b8d8f0}"
    "h2{margin-bottom:0.2em}h3{margin:0.2em 0}"
    ".panels{display:grid;grid-template-columns:repeat(auto-fill,minmax(440px,1fr));gap:12px;"
    "align-items:start}"
    "figure{margin:0;padding:6px;border:1px solid #ddd;border-radius:4px;min-width:0}"
    "figure svg{display:block;width:100%;max-width:520px;height:auto}"
    "figcaption{font-size:0.85em;margin-bottom:4px}"
    "figure.missing{background:#f5f5f5;color:#555}"
    "details{font-size:0.8em}p.overlap{background:#fff3cd;padding:4px 8px}"
)


def render_html(
    report_json: Mapping[str, Any],
    *,
    report: Optional[Report] = None,
    probe_dirs: Optional[Mapping[str, Union[str, Path]]] = None,
) -> str:
    """One self-contained HTML page: tables, summary, notes and the figures of every task."""
    title = "Feature extraction vs fine-tuning"
    out = [
        "<!DOCTYPE html>",
        f'<html><head><meta charset="utf-8"><title>{title}</title>',
        f"<style>{STYLE}</style></head><body>",
        f"<h1>{title}</h1>",
    ]
    summary = report.summary_lines() if report is not None else json_summary_lines(report_json)
    out += [f"<p>{html.escape(line)}</p>" for line in summary]
    answer = answer_lines(report) if report is not None else report_json.get("answer") or []
    if answer:
        out.append(f"<h2>{html.escape(ANSWER_TITLE)}</h2><ul>")
        out += [f"<li>{html.escape(str(line))}</li>" for line in answer]
        out.append("</ul>")
    if report is not None:
        for table in report.tables():
            out.append(f"<h2>{html.escape(table.title)}</h2>")
            out.append(_table_html(table.header, table.rows, marks=True))
    else:
        for table_title, header, rows in json_tables(report_json):
            out.append(f"<h2>{html.escape(table_title)}</h2>")
            out.append(_table_html(header, rows))
    figure_index = 0
    for row in task_rows(report_json):
        out.append(
            f'<h2 id="task-{html.escape(task_key(row))}">{html.escape(task_title(row))}</h2>'
        )
        out += [f'<p class="overlap">{html.escape(line)}</p>' for line in _overlap_lines(row)]
        out.append('<div class="panels">')
        for panel in task_panels(row, probe_dirs):
            if panel.draw is None:
                out.append(
                    f'<figure class="missing"><h3>{html.escape(panel.title)}</h3>'
                    f"<p>Missing: {html.escape(panel.missing or '')}</p></figure>"
                )
                continue
            figure_index += 1
            svg = figure_svg(panel.figure(), f"s{figure_index}-")
            out.append(
                f"<figure><h3>{html.escape(panel.title)}</h3>"
                f"<figcaption>{html.escape(panel.caption)}</figcaption>{svg}"
            )
            if panel.data_rows:
                out.append("<details><summary>plotted values</summary>")
                out.append(_table_html(panel.data_header, panel.data_rows))
                out.append("</details>")
            out.append("</figure>")
        out.append("</div>")
    notes = report.notes() if report is not None else json_notes(report_json)
    for note_title, lines in notes:
        out.append(f"<h2>{html.escape(note_title)}</h2><ul>")
        out += [f"<li>{html.escape(line)}</li>" for line in lines]
        out.append("</ul>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


# ---- PNG ----------

PNG_WIDTH = 22.0  # inches
PANEL_HEIGHT = 3.4


def render_png(
    report_json: Mapping[str, Any],
    path: Union[str, Path],
    *,
    report: Optional[Report] = None,
    probe_dirs: Optional[Mapping[str, Union[str, Path]]] = None,
    dpi: int = 90,
) -> None:
    """The tables (title right above each) and every task's panels in rows, in one PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if report is not None:
        tables = [
            (t.title, t.header, [[text for text, _ in r] for r in t.rows]) for t in report.tables()
        ]
    else:
        tables = json_tables(report_json)
    rows = task_rows(report_json)
    panels = [task_panels(row, probe_dirs) for row in rows]
    table_heights = [0.2 * (len(body) + 1) + 0.35 for _, _, body in tables]
    # A task whose panels are all missing gets a short row: its boxes of text need no more.
    heights = table_heights + [
        PANEL_HEIGHT + 0.4 if any(panel.draw for panel in task) else 1.6 for task in panels
    ]
    if not heights:
        heights = [1.0]
    figure = Figure(figsize=(PNG_WIDTH, sum(heights) + 0.3), layout="constrained")
    FigureCanvasAgg(figure)
    subfigures = figure.subfigures(len(heights), 1, height_ratios=heights, squeeze=False)[:, 0]
    for subfigure, (table_title, header, body) in zip(subfigures, tables):
        axes = subfigure.add_subplot(1, 1, 1)
        axes.set_axis_off()
        axes.set_title(table_title, loc="left", fontsize=11, fontweight="bold", pad=2)
        drawn = axes.table(
            cellText=[[str(cell) for cell in line] for line in body] or [["—"] * len(header)],
            colLabels=header,
            colColours=["#eeeeee"] * len(header),
            loc="upper left",
            cellLoc="center",
        )
        drawn.auto_set_font_size(False)
        drawn.set_fontsize(8.5)
        drawn.auto_set_column_width(list(range(len(header))))
    for subfigure, row, task in zip(subfigures[len(tables) :], rows, panels):
        subfigure.suptitle(task_title(row), x=0.005, ha="left", fontsize=12, fontweight="bold")
        axes_list = subfigure.subplots(1, len(task), squeeze=False)[0]
        for axes, panel in zip(axes_list, task):
            if panel.draw is None:
                draw_missing(axes, panel.title, panel.missing or "")
            else:
                panel.draw(axes)
                axes.set_title(panel.title, fontsize=10)
    if not tables and not rows:
        figure.text(0.5, 0.5, "No runs found", ha="center")
    figure.savefig(str(path), dpi=dpi)


def render_report_html(
    report: Report, probe_dirs: Optional[Dict[str, Union[str, Path]]] = None
) -> str:
    """
    One self-contained page: the tables and notes, and per task the figures (forest plot of the
    paired differences, score against cost, learning curves, scalar-mix weights beside the
    probe), drawn from `render_json(report)` with the report's own tables and notes.
    """
    return render_html(render_json(report), report=report, probe_dirs=probe_dirs)


def render_report_png(
    report: Report,
    path: Union[str, Path],
    probe_dirs: Optional[Dict[str, Union[str, Path]]] = None,
) -> None:
    """The same tables and figures in one PNG (matplotlib's Agg: no display needed)."""
    render_png(render_json(report), path, report=report, probe_dirs=probe_dirs)
