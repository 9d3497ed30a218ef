"""
What each panel of a task shows, as data: read from one row of `render_json`'s `rows` (an
encoder and a task) and, for the learning curves and the mix weights, from the run folders the
row names (`runs[].path`).

- `forest_data`: each mode's difference to the reference mode `fe` with its paired 95%
  interval (the row's `paired` entries, `PairedResult.as_dict()`).
- `frontier_data` (with `pareto_front`): one point per mode at the cell's mean score with its
  seed standard deviation, and its training time and trainable parameters with their range over
  the runs. A run's training time is the sum of its `cost.json` `epoch_seconds` (else
  `mean_epoch_seconds` × `epochs`); a mode's is the mean over the runs that recorded it.
- `curve_data`: `validation_<metric>` of every run's `metrics_epoch_<k>.json`, per seed (×100
  where the table shows percentages).
- `mix_weights`: the softmaxed `_scalar_mix.scalar_parameters.<i>` of the `fe` runs, from
  `weights.th` in each run's `model.tar.gz` (only that regular-file member is copied out of the
  archive, and loaded with `weights_only=True`) or from `best.th`, mean over seeds, per layer
  (the embedder's `layers` in `config.json` where it is a list, else 0, 1, ...: 0 = embeddings
  for `layers: "all"`).
- `probe_data`: an `allennlp probe` output's dev metric per layer (`probe.json`:
  `models.<pretrained|fine_tuned>.layers / scores`). `probe_dirs` maps `"<task>_<encoder>"` or
  `"<task>"` (the first that matches) to the probe's `--output-dir` or its `probe.json`.

Data that is not there is never an error: each function returns nothing and a reason (the
`NO_*` sentences), which the page shows in place of the figure.
"""

import math
import re
import shutil
import statistics
import tarfile
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from allennlp_tune.modes import ordered_run_modes
from allennlp_tune.reporting import labels
from allennlp_tune.reporting.labels import REFERENCE
from allennlp_tune.rundir import (
    ARCHIVE_NAME,
    CONFIG_NAME,
    COST_NAME,
    OK,
    PREDICTIONS_NAME,
    read_json,
)

PROBE_NAME = "probe.json"
WEIGHTS_MEMBER = "weights.th"
BEST_WEIGHTS = "best.th"
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
    """`SICK-E (BERT)`: the heading of a task's panels."""
    task, encoder = str(row.get("task")), str(row.get("encoder"))
    return f"{labels.task_title(task)} ({labels.encoder_title(encoder)})"


def used_modes(row: Mapping[str, Any]) -> List[str]:
    """The row's modes with runs, in the report's order (`ordered_run_modes`)."""
    cells = row.get("cells") or {}
    used = [mode for mode, cell in cells.items() if isinstance(cell, dict) and cell.get("runs")]
    return ordered_run_modes(used)


def _as_percent(row: Mapping[str, Any]) -> bool:
    cells = [cell for cell in (row.get("cells") or {}).values() if cell.get("runs")]
    return all(cell.get("as_percent", True) for cell in cells)


def _metric_title(row: Mapping[str, Any]) -> str:
    return str(row.get("metric") or "score")


def forest_data(row: Mapping[str, Any], reference: str = REFERENCE) -> List[Dict[str, Any]]:
    """
    The forest plot's points: one per `paired` entry whose reference (`mode_b`) is `reference`,
    in the report's order: mode, reference, difference, low, high, verdict, metric, examples,
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
    order = ordered_run_modes(str(point["mode"]) for point in points)
    return sorted(points, key=lambda point: order.index(str(point["mode"])))


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
    """The softmax of `values` (a scalar mix's weights from its raw parameters)."""
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
