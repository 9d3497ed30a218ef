"""
Fitting the cost model (`cost_model`) from run directories, and printing it as the source text
of `COST_MODEL`.

`fit_cost_model(run_dirs)` fits `a`, `b`, `c`, `d` (and `g`, `first_a`, `first_b`) per mode from
finished or running runs: their `cost.json` (`mean_epoch_seconds`, `peak_rss_mb`), or for runs
without one the `training_duration` over the epochs and `peak_worker_0_memory_MB` of
`metrics.json`; `W` counted from each run's `config.json` as the planner counts it, and `L`,
`H`, `P` from its encoder's `config.json`. Where a mode's runs have more than one task head (the
model's `type`), each head also gets an entry of its own, `"MODE/HEAD"`, which the planner
prefers to the mode's pooled one.

A cached `fe` run with its `epoch_seconds` gives its first epoch to `first_a` / `first_b` and
the mean of the rest (if any) to `a` / `b`. Fit those on runs whose cache started empty (a
grid's first seed, or a cache folder of its own): a later seed of a grid finds the features
stored, and its first epoch is a cached one.

Time: where the runs of a mode have encoders of widths `H` that differ by more than `MIN_SPREAD`,
two terms through the origin (`a = 0`) by non-negative least squares: `b` and `e` (the `W * L * H^2`
and `W * L * H` terms), or for a cached fe run's later epochs `k` and `e` (per wordpiece, and `W * L
* H`), its first epoch then fitted as the encoder's pass (first minus later, `b` and `e`) added to
them; otherwise one term, `W * L * H^2`, by least squares where the runs differ in it by more than
`MIN_SPREAD`, else only its slope can be told: `a = 0` (time proportional to the work). Memory:
least squares where the runs differ in `P` by more than `MIN_SPREAD`, else `c = BASE_RSS_MB`, with
`d` the mean of `(rss - c) / P`. `g` is fitted (least squares beside `P`) where the runs differ in
`N` by more than `MIN_SPREAD` and the slope is positive, else it is None (no per-instance term).
Where the runs differ in their longest batch's activations `B * T * L * H` (`plan.activation_work`)
by more than `MIN_SPREAD`, `s` is fitted beside `c`, `d` (and `g`) by non-negative least squares.
`fit_cost_model(..., per_instance={mode: g})` takes a mode's `g` as given (the growth bench's,
which varies `N` alone) and fits the other memory terms to what is left: runs of two tasks differ
in `N` and `T` together, and cannot tell the two apart.
Runs on a GPU (`cost.json`'s `peak_gpu_mb` set) are skipped: they say nothing about CPU time.
"""

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from allennlp_tune.planning.cost_model import BASE_RSS_MB, ModeCost
from allennlp_tune.planning.plan import activation_work, plan_cell
from allennlp_tune.rundir import CONFIG_NAME, COST_NAME, METRICS_NAME, parse_run_name, read_json

# Below this relative spread of x, a mode's runs cannot separate the intercept from the slope.
MIN_SPREAD = 0.10


@dataclass
class CostPoint:
    """One run's measurement, for `fit_cost_model`."""

    run_dir: Path
    mode: str
    work: float  # W x L x H^2
    linear_work: float  # W x L x H
    params: int
    epoch_seconds: Optional[float]
    peak_rss_mb: Optional[float]
    first_epoch_seconds: Optional[float] = None  # a cached fe run's first epoch
    head: Optional[str] = None  # the model's registered type
    instances: int = 0  # the train split's
    wordpieces: int = 0  # W
    activations: Optional[float] = None  # B x T x L x H, the longest batch's


def _duration_seconds(text: Any) -> Optional[float]:
    """AllenNLP's `training_duration`, "H:MM:SS.ffffff" (maybe "N day(s), ..."), in seconds."""
    if not isinstance(text, str):
        return None
    match = re.fullmatch(r"(?:(\d+) days?, )?(\d+):(\d\d):(\d\d(?:\.\d+)?)", text.strip())
    if not match:
        return None
    days, hours, minutes, seconds = match.groups()
    return int(days or 0) * 86400 + int(hours) * 3600 + int(minutes) * 60 + float(seconds)


def measurement(run_dir: Path, cost: Any = None) -> Tuple[Optional[float], Optional[float]]:
    """
    (mean seconds per epoch, peak RSS MB) from cost.json, else metrics.json; None if none.
    `cost`: cost.json's content when the caller has read it already.
    """
    if cost is None:
        cost = read_json(Path(run_dir) / COST_NAME)
    if isinstance(cost, dict) and (cost.get("mean_epoch_seconds") or cost.get("peak_rss_mb")):
        return cost.get("mean_epoch_seconds"), cost.get("peak_rss_mb")
    metrics = read_json(Path(run_dir) / METRICS_NAME)
    if not isinstance(metrics, dict):
        return None, None
    seconds = _duration_seconds(metrics.get("training_duration"))
    epochs = metrics.get("training_epochs", metrics.get("epoch"))
    per_epoch = None
    if seconds is not None and isinstance(epochs, int) and epochs >= 0:
        per_epoch = seconds / (epochs + 1)
    return per_epoch, metrics.get("peak_worker_0_memory_MB")


def cost_point(run_dir: Path) -> Optional[CostPoint]:
    """The measurement and the size of the work of one run directory, None if unusable."""
    run_dir = Path(run_dir)
    config = read_json(run_dir / CONFIG_NAME)
    if not isinstance(config, dict):
        return None
    cost = read_json(run_dir / COST_NAME)
    if isinstance(cost, dict) and cost.get("peak_gpu_mb") is not None:
        return None  # trained on a GPU: nothing to say about CPU time or RAM
    seconds, rss = measurement(run_dir, cost)
    if seconds is None and rss is None:
        return None
    name, _ = parse_run_name(run_dir.parent.name)
    mode = name.mode if name else None
    plan = plan_cell(run_dir / CONFIG_NAME, rendered=config, cost_model={})
    mode = mode or plan.mode
    encoder = plan.encoder
    if mode is None or plan.data is None or encoder is None or encoder.work_scale is None:
        return None
    first = None
    epochs = cost.get("epoch_seconds") if isinstance(cost, dict) else None
    if mode == "fe" and plan.cache_config is not None and isinstance(epochs, list) and epochs:
        # The first epoch runs the encoder and stores the features; the later ones read them.
        first = float(epochs[0])
        seconds = sum(epochs[1:]) / len(epochs[1:]) if len(epochs) > 1 else None
    return CostPoint(
        run_dir=run_dir,
        mode=mode,
        work=plan.data.wordpieces * encoder.work_scale,
        linear_work=plan.data.wordpieces * encoder.linear_work_scale,
        wordpieces=plan.data.wordpieces,
        params=int(encoder.params or 0),
        epoch_seconds=seconds,
        peak_rss_mb=rss,
        first_epoch_seconds=first,
        head=plan.head,
        instances=plan.data.instances,
        activations=activation_work(plan),
    )


def _line(xs: Sequence[float], ys: Sequence[float], base: float) -> Tuple[float, float]:
    """(intercept, slope) by least squares; through `base` when the x's do not spread."""
    mean_x = sum(xs) / len(xs)
    if len(xs) >= 2 and _spread(xs) > MIN_SPREAD:
        mean_y = sum(ys) / len(ys)
        sxx = sum((x - mean_x) ** 2 for x in xs)
        slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / sxx
        intercept = mean_y - slope * mean_x
        if slope > 0 and intercept >= 0:
            return intercept, slope
    return base, sum((y - base) / x for x, y in zip(xs, ys)) / len(xs)


@dataclass
class TimeFit:
    """Seconds `a + b * work + e * linear_work + k * wordpieces` (`cost_model`'s terms)."""

    a: float = 0.0
    b: float = 0.0
    e: Optional[float] = None
    k: Optional[float] = None

    def __add__(self, other: "TimeFit") -> "TimeFit":
        def total(x: Optional[float], y: Optional[float]) -> Optional[float]:
            return None if x is None and y is None else (x or 0.0) + (y or 0.0)

        return TimeFit(
            self.a + other.a, self.b + other.b, total(self.e, other.e), total(self.k, other.k)
        )


def _time_fit(
    points: Sequence[CostPoint], seconds: Sequence[float], cached: bool = False
) -> TimeFit:
    """
    The time terms of `seconds` over the runs `points` (module docstring): where the runs'
    widths H spread, two terms through the origin by non-negative least squares, `b` and `e`
    (the encoder's matrix products and its width-linear work) or, for `cached` epochs that run
    no encoder, `k` and `e` (the head's work per wordpiece, and reading and mixing the L x H
    features of each); else `_line` on `W * L * H^2` alone.
    """
    widths = [p.work / p.linear_work for p in points]
    if len(seconds) >= 2 and _spread(widths) > MIN_SPREAD:
        first = [p.wordpieces if cached else p.work for p in points]
        one, e = _nnls([first, [p.linear_work for p in points]], seconds)
        if one > 0 or e > 0:
            return TimeFit(e=e, k=one) if cached else TimeFit(b=one, e=e)
    a, b = _line([p.work for p in points], seconds, 0.0)
    return TimeFit(a=a, b=b)


def _nnls(columns: Sequence[Sequence[float]], ys: Sequence[float]) -> List[float]:
    """
    The non-negative least-squares coefficients of `ys` on `columns` (one list of x's per
    term), each column scaled to at most 1 so that the solver sees comparable numbers.
    """
    import numpy
    from scipy.optimize import nnls

    scales = [max(column) for column in columns]
    matrix = numpy.array([[v / s for v in column] for column, s in zip(columns, scales)]).T
    solution, _ = nnls(matrix, numpy.array(ys, dtype=float))
    return [float(value) / scale for value, scale in zip(solution, scales)]


def _spread(values: Sequence[float]) -> float:
    """(largest - smallest) / mean of the values: how far apart they are, relative to their size."""
    mean = sum(values) / len(values)
    return (max(values) - min(values)) / mean if mean else 0.0


@dataclass
class MemoryFit:
    """Peak RSS MB `c + d * P + g * N + s * B * T * L * H` (`cost_model`'s terms)."""

    c: float
    d: float
    g: Optional[float] = None
    s: Optional[float] = None


def _memory_fit(points: Sequence[CostPoint], g: Optional[float] = None) -> MemoryFit:
    """
    The memory terms of the runs `points` (module docstring). Where their longest batches'
    activations spread, `c`, `d` (where `P` spreads), `g` (where `N` spreads, unless given) and
    `s`, all non-negative, by least squares (`_activation_fit`). Otherwise `g` by least squares
    beside `P` (or beside the constant alone, when `P` does not spread) where `N` spreads and
    its slope is positive, else None, and `c`, `d` as `_line` fits them.
    """
    import numpy

    given = g
    params = [float(p.params) for p in points]
    instances = [float(p.instances) for p in points]
    rss = [p.peak_rss_mb - (given or 0.0) * p.instances for p in points]
    activations = [p.activations or 0.0 for p in points]
    known = all(p.activations for p in points)
    if len(points) >= 2 and known and _spread(activations) > MIN_SPREAD:
        fitted = _activation_fit(params, None if given is not None else instances, activations, rss)
        if fitted is not None:
            return MemoryFit(fitted.c, fitted.d, given if given is not None else fitted.g, fitted.s)
    if given is not None:
        c, d = _line(params, rss, BASE_RSS_MB)
        return MemoryFit(c, d, given)
    if len(points) >= 2 and _spread(instances) > MIN_SPREAD:
        varies = _spread(params) > MIN_SPREAD
        columns = [[1.0] * len(points)] + ([params] if varies else []) + [instances]
        if len(points) >= len(columns):
            solution = numpy.linalg.lstsq(numpy.array(columns).T, numpy.array(rss), rcond=None)
            coefficients = [float(value) for value in solution[0]]
            g = coefficients[-1]
            if g > 0:
                if varies and coefficients[0] >= 0 and coefficients[1] > 0:
                    return MemoryFit(coefficients[0], coefficients[1], g)
                if not varies and coefficients[0] > BASE_RSS_MB:
                    # One encoder: c is the assumed base and d carries the rest of the constant.
                    mean_params = sum(params) / len(params)
                    return MemoryFit(BASE_RSS_MB, (coefficients[0] - BASE_RSS_MB) / mean_params, g)
    c, d = _line(params, rss, BASE_RSS_MB)
    return MemoryFit(c, d)


def _activation_fit(
    params: Sequence[float],
    instances: Optional[Sequence[float]],
    activations: Sequence[float],
    rss: Sequence[float],
) -> Optional[MemoryFit]:
    """
    `c`, `d`, `g` and `s` of `rss` by non-negative least squares (`_nnls`); `d` only where `P`
    spreads (else `c` is `BASE_RSS_MB` and `d` carries the rest of the constant, as one encoder
    cannot tell them apart), `g` only where `instances` are given and spread. None where there
    are fewer runs than terms or `s` comes out 0.
    """
    varies = _spread(params) > MIN_SPREAD
    per_instance = instances is not None and _spread(instances) > MIN_SPREAD
    columns = [[1.0] * len(rss)] + ([list(params)] if varies else [])
    columns += ([list(instances)] if per_instance else []) + [list(activations)]
    if len(rss) < len(columns):
        return None
    values = _nnls(columns, rss)
    if values[-1] <= 0 or (not varies and values[0] <= BASE_RSS_MB):
        return None
    g = values[-2] if per_instance else None
    if varies:
        return MemoryFit(values[0], values[1], g, values[-1])
    mean_params = sum(params) / len(params)
    return MemoryFit(BASE_RSS_MB, (values[0] - BASE_RSS_MB) / mean_params, g, values[-1])


def fit_cost_model(
    run_dirs: Iterable[Path], per_instance: Optional[Mapping[str, float]] = None
) -> Dict[str, ModeCost]:
    """
    Per mode, the coefficients of the cost model (module docstring) from the run directories
    (each holding `config.json` and `cost.json` or `metrics.json`; others are skipped). A mode
    without usable runs is left out (the planner prints "n/a" for it). `per_instance`: the `g`
    of some modes (keys as `COST_MODEL`'s), taken as given.
    """
    points: Dict[str, List[CostPoint]] = {}
    for run_dir in run_dirs:
        if not Path(run_dir).is_dir():
            continue
        point = cost_point(Path(run_dir))
        if point is not None:
            points.setdefault(point.mode, []).append(point)
    for mode, runs in list(points.items()):
        heads = {point.head for point in runs}
        if len(heads) > 1:  # each head on its own too (module docstring)
            for point in runs:
                if point.head is not None:
                    points.setdefault(f"{mode}/{point.head}", []).append(point)
    model: Dict[str, ModeCost] = {}
    for mode, runs in sorted(points.items()):
        timed = [p for p in runs if p.epoch_seconds and p.work > 0]
        sized = [p for p in runs if p.peak_rss_mb and p.params > 0]
        firsts = [p for p in runs if p.first_epoch_seconds and p.work > 0]
        time = first = None
        if timed:
            cached = any(p.first_epoch_seconds is not None for p in timed)
            time = _time_fit(timed, [p.epoch_seconds for p in timed], cached=cached)
        both = [p for p in firsts if p.epoch_seconds]
        if time is not None and time.k is not None and len(both) == len(firsts):
            # The first epoch is a later one plus the encoder's pass over the data: fitted as
            # that pass (first - later), the terms added.
            passes = [p.first_epoch_seconds - p.epoch_seconds for p in both]
            first = time + _time_fit(both, passes)
        elif firsts:
            first = _time_fit(firsts, [p.first_epoch_seconds for p in firsts])
        memory = _memory_fit(sized, (per_instance or {}).get(mode)) if sized else None
        fitted_on = ", ".join(sorted(f"{p.run_dir.parent.name}/{p.run_dir.name}" for p in runs))
        model[mode] = ModeCost(
            a=time.a if time else None,
            b=time.b if time else None,
            c=memory.c if memory else None,
            d=memory.d if memory else None,
            runs=len(runs),
            fitted_on=fitted_on,
            first_a=first.a if first else None,
            first_b=first.b if first else None,
            g=memory.g if memory else None,
            e=time.e if time else None,
            first_e=first.e if first else None,
            k=time.k if time else None,
            first_k=first.k if first else None,
            s=memory.s if memory else None,
        )
    return model


def format_cost_model(model: Mapping[str, ModeCost]) -> str:
    """`COST_MODEL`'s source text for a fitted model."""
    lines = ["COST_MODEL: Dict[str, ModeCost] = {"]
    for mode, cost in model.items():
        pairs = [("a", cost.a), ("b", cost.b), ("c", cost.c), ("d", cost.d)]
        if cost.first_b is not None:
            pairs += [("first_a", cost.first_a), ("first_b", cost.first_b)]
        for key in ("g", "e", "first_e", "k", "first_k", "s"):  # the terms some entries lack
            if getattr(cost, key) is not None:
                pairs += [(key, getattr(cost, key))]
        values = ", ".join(
            f"{key}={'None' if value is None else f'{value:.6g}'}" for key, value in pairs
        )
        lines.append(f"    # {cost.fitted_on}")
        lines.append(f"    {mode!r}: ModeCost({values}, runs={cost.runs}),")
    lines.append("}")
    return "\n".join(lines)


__all__ = [
    "MIN_SPREAD",
    "CostPoint",
    "cost_point",
    "fit_cost_model",
    "format_cost_model",
    "measurement",
]
