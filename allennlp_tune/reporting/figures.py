"""
The panels' figures, drawn with matplotlib: `draw_forest`, `draw_frontier`, `draw_curves` and
`draw_mix` draw onto given axes (the page draws each on its own figure, the PNG all of a task in
one row), and `forest_figure`, `frontier_figure`, `curve_figure` and `mix_figure` return a
`Figure` of one. Artists carry `gid`s (`g-<panel>-<task>_<encoder>-<mode>`) that the SVG keeps
as `id`s, so that a test or a reader can find a mode's marker in the page. A panel that cannot
be drawn is a named box saying why (`draw_missing`).
"""

import math
from typing import Any, Mapping, Optional, Sequence, Tuple

from allennlp_tune.reporting.labels import (
    METRIC_TITLES,
    MODE_COLOURS,
    OTHER_COLOUR,
    REFERENCE,
    TIE_COLOUR,
    mode_colour,
    signed,
)
from allennlp_tune.reporting.paired import TIE
from allennlp_tune.reporting.panel_data import (
    pareto_front,
)

PROBE_STYLES = {"pretrained": ("#444444", "o"), "fine_tuned": (MODE_COLOURS["ft"], "s")}


def _new_figure(size: Tuple[float, float]):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=size, dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def forest_text(point: Mapping[str, Any]) -> str:
    """`+1.2 [-0.3, +2.8] tie`, as `PairedResult.text`."""
    return (
        f"{signed(point['difference'])} [{signed(point['low'])}, {signed(point['high'])}] "
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
    """Each point's difference and interval, the zero line, and the verdict beside it."""
    ys = list(range(len(points)))[::-1]
    for y, point in zip(ys, points):
        verdict = point["verdict"]
        colour = TIE_COLOUR if verdict == TIE else mode_colour(verdict)
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
    """Score against `cost_key` on a log axis, the seed spread, and the Pareto frontier."""
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
            color=mode_colour(point["mode"]),
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
            color=mode_colour(point["mode"]),
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
    """One thin line per run and epoch, coloured by mode."""
    for mode, runs in curves.items():
        for index, run in enumerate(runs):
            values = [math.nan if value is None else value for value in run["values"]]
            axes.plot(
                run["epochs"],
                values,
                color=mode_colour(mode),
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
    """Mix weights per layer as bars and the probe per layer as lines (a right axis)."""
    handles = []
    if mix is not None:
        bars = axes.bar(
            mix["layers"],
            mix["weights"],
            color=mode_colour(REFERENCE),
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
            colour, marker = PROBE_STYLES.get(kind, (OTHER_COLOUR, "^"))
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
    """A named box saying why a panel cannot be drawn."""
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
