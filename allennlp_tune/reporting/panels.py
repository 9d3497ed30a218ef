"""
A task's panels, in the page's order: the forest plot of the paired differences, score against
training time and against trainable parameters, the learning curves, and the scalar-mix weights
beside the per-layer probe. Each `Panel` has a title and a caption, a function that draws it
and the values it plots (shown under the figure), or, where it cannot be drawn, why not.
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, List, Mapping, Optional, Tuple, Union

from allennlp_tune.reporting.figures import (
    COSTS,
    _new_figure,
    draw_curves,
    draw_forest,
    draw_frontier,
    draw_missing,
    draw_mix,
)
from allennlp_tune.reporting.labels import NOT_AVAILABLE, REFERENCE
from allennlp_tune.reporting.panel_data import (
    NO_COSTS,
    NO_CURVES,
    NO_PROBE,
    _as_percent,
    _metric_title,
    _probe_location,
    curve_data,
    forest_data,
    forest_missing_reason,
    frontier_data,
    mix_weights,
    pareto_front,
    probe_data,
    task_key,
)


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
    """A plotted value as the tables under the figures show it: `12.34`, `1.1e+08`, `n/a`."""
    if value is None:
        return NOT_AVAILABLE
    if abs(value) >= 1e5:
        return f"{value:.3g}"
    return f"{value:.{digits}f}"


def forest_panel(row: Mapping[str, Any], key: str) -> Panel:
    """Each mode's paired difference to `fe` with its interval and verdict, or why there is none."""
    forest = forest_data(row)
    title = f"Difference to {REFERENCE}, paired 95% interval"
    if not forest:
        return Panel(title, missing=forest_missing_reason(row))
    return Panel(
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


def frontier_panels(
    row: Mapping[str, Any], key: str, higher_is_better: bool, score_label: str
) -> List[Panel]:
    """Score against training time, then against trainable parameters, with the Pareto front."""
    panels = []
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
    return panels


def curve_panel(row: Mapping[str, Any], key: str, score_label: str) -> Panel:
    """The validation metric after each epoch, one line per seed, or why there is none."""
    curves = curve_data(row)
    title = "Learning curves"
    if not curves:
        return Panel(title, missing=NO_CURVES)
    return Panel(
        title,
        f"Validation {_metric_title(row)} after each epoch; one thin line per seed.",
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


def _layer_rows(
    mix: Optional[Mapping[str, Any]], probe: Optional[Mapping[str, Any]]
) -> Tuple[List[str], List[List[str]]]:
    """The plotted values of the mix and probe panel: per layer, its weight and probe scores."""
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
    return header, rows


def mix_panels(
    row: Mapping[str, Any], key: str, probe_dirs: Optional[Mapping[str, Union[str, Path]]]
) -> List[Panel]:
    """
    The scalar-mix weights of the fe runs and the per-layer probe, in one panel where either
    exists; a missing panel for each that does not, saying why.
    """
    panels = []
    mix, mix_why = mix_weights(row)
    location = _probe_location(row, probe_dirs)
    probe, probe_why = probe_data(location) if location is not None else (None, NO_PROBE)
    if mix is not None or probe is not None:
        title = "Scalar-mix weights (fe)" if mix is not None else "Per-layer probe"
        if mix is not None and probe is not None:
            title = "Scalar-mix weights (fe) and per-layer probe"
        header, rows = _layer_rows(mix, probe)
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


def task_panels(
    row: Mapping[str, Any], probe_dirs: Optional[Mapping[str, Union[str, Path]]] = None
) -> List[Panel]:
    """The panels of one task row, in the page's order; missing ones say why."""
    key = task_key(row)
    percent = _as_percent(row)
    score_label = f"dev {_metric_title(row)}" + (" (×100)" if percent else "")
    # A score table in percentages is of metrics where higher is better.
    return (
        [forest_panel(row, key)]
        + frontier_panels(row, key, percent, score_label)
        + [curve_panel(row, key, score_label)]
        + mix_panels(row, key, probe_dirs)
    )
