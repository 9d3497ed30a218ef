"""Per-layer line plots like Figures 1 and 2 of Peters, Ruder & Smith (2019), written as PNG."""

import json
import math
import textwrap
from typing import Any, Dict, Optional, Sequence

# Styles per curve: pretrained and fine-tuned lines, and their random-label controls (dashed).
_STYLES = {
    "pretrained": {"color": "tab:blue", "marker": "o"},
    "fine_tuned": {"color": "tab:orange", "marker": "s"},
}
_NAMES = {"pretrained": "pretrained", "fine_tuned": "fine-tuned"}


def plot_layers(
    curves: Dict[str, Dict[str, Sequence]],
    path: str,
    *,
    ylabel: str,
    title: str,
    controls: Optional[Dict[str, Dict[str, Sequence]]] = None,
    y_from_zero: bool = False,
    control_label: str = "random labels",
    bounds: Optional[Dict[str, Dict[str, Sequence]]] = None,
    bound_label: str = "probe bound H(Y) - CE",
) -> None:
    """
    One line per model over the layers, e.g.
    `curves = {"pretrained": {"layers": [0, 1, 2], "values": [0.5, 0.6, 0.7]}}`. `controls`, with
    the same keys, adds dashed random-label lines. Missing values (`None`) leave gaps.
    `y_from_zero` starts the y axis at 0 (for mutual information, so "about 0" shows as such).
    `control_label` names the dashed lines (e.g. "control task"); `bounds`, with the same keys,
    adds dotted lines (the probe's variational lower bound beside an MI estimate).
    """
    # The object-oriented Agg API: no pyplot, so no global backend or figure state is touched.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(6.0, 4.0), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    all_layers = set()
    for kind, curve in curves.items():
        style = _STYLES.get(kind, {"marker": "o"})
        values = [float("nan") if value is None else value for value in curve["values"]]
        axes.plot(curve["layers"], values, label=_NAMES.get(kind, kind), **style)
        all_layers.update(curve["layers"])
    for kind, curve in (controls or {}).items():
        style = dict(_STYLES.get(kind, {}), linestyle="--", marker=None, alpha=0.7)
        values = [float("nan") if value is None else value for value in curve["values"]]
        label = f"{_NAMES.get(kind, kind)}, {control_label}"
        axes.plot(curve["layers"], values, label=label, **style)
    for kind, curve in (bounds or {}).items():
        style = dict(_STYLES.get(kind, {}), linestyle=":", marker="x", alpha=0.9)
        values = [float("nan") if value is None else value for value in curve["values"]]
        axes.plot(
            curve["layers"], values, label=f"{_NAMES.get(kind, kind)}, {bound_label}", **style
        )
    axes.set_xticks(sorted(all_layers))
    if y_from_zero:
        axes.set_ylim(bottom=0.0)
    axes.set_xlabel("layer (0 = embeddings)")
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.grid(True, alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, format="png")


# Figure of the instruments side by side (issue 17): the line styles of each role.
_ROLE_STYLES = {
    "estimate": {"linestyle": "-"},
    "control": {"linestyle": "--", "alpha": 0.7},
    "mi_bound": {"linestyle": ":", "marker": "+", "markersize": 9},
    "probe_bound": {"linestyle": "-.", "marker": "x", "linewidth": 2.0},
    "selectivity": {"linestyle": ":", "marker": "^"},
}
# Markers of the MI estimates, by `mi.json`'s "estimator" field (the paper's plain EDGE, ours).
_ESTIMATOR_MARKERS = {"edge_projected": "o", "edge_projected_uncorrected": "s", "edge": "v"}


def check_instrument_results(results: Any, name: str, command: str) -> None:
    """
    Raises `ValueError`, naming `name` (the file), unless `results` is the JSON that
    `allennlp {command}` writes (`command` is "probe" or "mi").
    """
    if not isinstance(results, dict):
        raise ValueError(f"{name} is not an `allennlp {command}` output: not a JSON object.")
    found = results.get("command")
    if found != command:
        what = f"an `allennlp {found}` output" if isinstance(found, str) else "no command output"
        raise ValueError(
            f"{name} is {what}, not the {command}.json that `allennlp {command}` writes "
            '(its "command" field must be ' + json.dumps(command) + ")."
        )
    models = results.get("models")
    needed = ("layers", "scores", "bound") if command == "probe" else ("layers", "mi")
    if command == "mi":
        needed += ("random_label_mi",)
    if not isinstance(models, dict) or not models:
        raise ValueError(f'{name} has no "models" with per-layer results.')
    for kind, model in models.items():
        missing = [key for key in needed if key not in model]
        if missing:
            raise ValueError(f'{name}: model "{kind}" lacks {", ".join(missing)}.')
    if command == "mi" and not isinstance(results.get("estimator"), dict):
        raise ValueError(f'{name} has no "estimator" field.')


def check_same_task(probe: Dict[str, Any], mi: Dict[str, Any], name: str) -> None:
    """Raises `ValueError`, naming `name`, when `mi` was run on another task than `probe`."""
    task, mi_task = _task(probe.get("dev_reader") or probe.get("reader")), _task(mi.get("reader"))
    if task and mi_task and task != mi_task:
        raise ValueError(
            f"{name} is an mi.json of {mi_task}, the probe.json one of {task}: "
            "give the outputs of one task."
        )


def plot_instruments(
    probe: Dict[str, Any], mi_results: Sequence[Dict[str, Any]], path: str, *, title: str
) -> Dict[str, Any]:
    """
    One figure, three panels over the same layers, pretrained and fine-tuned side by side:

    1. mutual information in bits: the EDGE estimate of each `mi.json` in `mi_results` (labelled
       by its "estimator" field), its random-label control dashed, its cross-fitted bound dotted,
       and the probe's bound `H(Y) - CE` from `probe` (`probe.json`) dash-dotted, so that an
       estimate below a bound shows at a glance;
    2. the probe's dev score, the control task's score (dashed) and the selectivity (dotted);
    3. the MDL compression (uniform code / online code).

    A panel whose input is missing (no `mi.json`, a probe run without `--control` or `--mdl`)
    says what is missing and the flag that produces it; for regression tasks the MDL panel says
    "MDL: class labels only". Raises `ValueError` when an input is not a probe or mi output or
    the inputs are of different tasks.

    Returns what was drawn, read back from the figure:
    `{"title": ..., "path": ..., "panels": {"mi" | "probe" | "mdl": {"ylabel": ...,
    "series": {key: {"label", "layers", "values"}}, "messages": [...]}}}` with keys such as
    `"pretrained/edge_projected/mi"`, `"fine_tuned/probe/bound"`, `"pretrained/control_scores"`;
    values are floats, `None` where nothing was drawn.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    check_instrument_results(probe, "probe", "probe")
    for index, mi in enumerate(mi_results):
        check_instrument_results(mi, f"mi result {index + 1}", "mi")
    for index, mi in enumerate(mi_results):
        check_same_task(probe, mi, f"mi result {index + 1}")

    figure = Figure(figsize=(17.0, 5.5), dpi=100)
    FigureCanvasAgg(figure)
    panels = figure.subplots(1, 3, sharex=True)
    keys: Dict[Any, str] = {}  # line -> series key
    messages: Dict[str, list] = {"mi": [], "probe": [], "mdl": []}
    models = probe["models"]

    def draw(axes, key: str, kind: str, layers, values, label: str, role: str, **style) -> None:
        style = {**_STYLES.get(kind, {"marker": "o"}), **_ROLE_STYLES.get(role, {}), **style}
        if role == "control":
            style["marker"] = None
        values = [float("nan") if value is None else float(value) for value in values]
        (line,) = axes.plot(layers, values, label=f"{_NAMES.get(kind, kind)}, {label}", **style)
        keys[line] = key

    # 1. Mutual information: the estimates, their controls and bounds, and the probe's bound.
    mi_axes, probe_axes, mdl_axes = panels
    names = [mi["estimator"].get("estimator", "EDGE") for mi in mi_results]
    for index, (mi, name) in enumerate(zip(mi_results, names)):
        if names.count(name) > 1:
            name = f"{name} ({index + 1})"
        marker = _ESTIMATOR_MARKERS.get(mi["estimator"].get("estimator"), "D")
        for kind, model in mi["models"].items():
            layers = model["layers"]
            prefix = f"{kind}/{name}"
            draw(
                mi_axes, f"{prefix}/mi", kind, layers, model["mi"], name, "estimate", marker=marker
            )
            draw(
                mi_axes,
                f"{prefix}/random_label_mi",
                kind,
                layers,
                model["random_label_mi"],
                f"{name}, random labels",
                "control",
            )
            if model.get("bound") is not None:
                draw(
                    mi_axes,
                    f"{prefix}/bound",
                    kind,
                    layers,
                    model["bound"],
                    f"{name}'s cross-fitted bound",
                    "mi_bound",
                )
        if mi.get("bound") is None:
            messages["mi"].append(
                f"{name}: no cross-fitted bound (run `allennlp mi` without --no-bound)"
            )
    if not mi_results:
        messages["mi"].append(
            "EDGE estimate: no mi.json given; run `allennlp mi` "
            "(--estimator edge_projected or edge)"
        )
    for kind, model in models.items():
        if any(value is not None for value in model["bound"]):
            draw(
                mi_axes,
                f"{kind}/probe/bound",
                kind,
                model["layers"],
                model["bound"],
                "probe bound H(Y) - CE",
                "probe_bound",
            )
    if not any(value is not None for model in models.values() for value in model["bound"]):
        messages["mi"].append(
            "probe bound H(Y) - CE: none in probe.json (a regression or ridge probe has no "
            "cross-entropy; `allennlp probe --probe logistic` on class labels gives it)"
        )
    mi_axes.set_ylim(bottom=min(0.0, mi_axes.get_ylim()[0]))  # 0 bits in view
    mi_axes.set_title("mutual information with the labels")
    mi_axes.set_ylabel("bits")

    # 2. The probe's score, its control task's score and the selectivity.
    metric = probe.get("metric", "score")
    for kind, model in models.items():
        layers = model["layers"]
        draw(probe_axes, f"{kind}/scores", kind, layers, model["scores"], metric, "estimate")
        if "control_scores" in model:
            draw(
                probe_axes,
                f"{kind}/control_scores",
                kind,
                layers,
                model["control_scores"],
                "control task",
                "control",
            )
            draw(
                probe_axes,
                f"{kind}/selectivity",
                kind,
                layers,
                model["selectivity"],
                "selectivity",
                "selectivity",
            )
    if not any("control_scores" in model for model in models.values()):
        messages["probe"].append(
            "control task and selectivity: not in probe.json; run `allennlp probe --control`"
        )
    probe_axes.axhline(0.0, color="grey", linewidth=0.8)
    probe_axes.set_title(f"{probe.get('probe', '')} probe, control task, selectivity".strip())
    probe_axes.set_ylabel(f"dev {metric}")

    # 3. MDL: compression of the online code.
    has_mdl = [kind for kind, model in models.items() if "mdl" in model]
    for kind in has_mdl:
        compression = models[kind]["mdl"]["compression"]
        if any(value is not None for value in compression):
            layers = models[kind]["layers"]
            draw(mdl_axes, f"{kind}/compression", kind, layers, compression, "MDL", "estimate")
    if not has_mdl:
        messages["mdl"].append("MDL: not in probe.json; run `allennlp probe --mdl`")
    elif not mdl_axes.lines:
        messages["mdl"].append("MDL: class labels only (no online code for real-valued scores)")
    mdl_axes.set_title("MDL probe (online code)")
    mdl_axes.set_ylabel("compression (uniform code / online code)")

    all_layers = sorted({layer for line in keys for layer in line.get_xdata()})
    drawn: Dict[str, Any] = {"title": title, "path": path, "panels": {}}
    for name, axes in zip(("mi", "probe", "mdl"), panels):
        for index, message in enumerate(messages[name]):
            # On an empty panel, down from its middle; beside lines, up from the bottom.
            y = 0.65 - 0.22 * index if not axes.lines else 0.03 + 0.15 * index
            axes.text(
                0.5,
                y,
                textwrap.fill(message, 48, break_long_words=False, break_on_hyphens=False),
                transform=axes.transAxes,
                ha="center",
                va="top" if not axes.lines else "bottom",
                fontsize=8,
                bbox={"facecolor": "white", "edgecolor": "grey", "alpha": 0.85},
            )
        if all_layers:
            axes.set_xticks(all_layers)
        axes.set_xlabel("layer (0 = embeddings)")
        axes.grid(True, alpha=0.3)
        if axes.lines:
            axes.legend(
                fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False
            )
        drawn["panels"][name] = {
            "ylabel": axes.get_ylabel(),
            "series": {
                keys[line]: {
                    "label": line.get_label(),
                    "layers": [int(x) for x in line.get_xdata()],
                    "values": [None if math.isnan(y) else float(y) for y in line.get_ydata()],
                }
                for line in axes.lines
                if line in keys
            },
            "messages": [text.get_text().replace("\n", " ") for text in axes.texts],
        }
    figure.suptitle(title)
    figure.savefig(path, format="png", bbox_inches="tight")
    return drawn


def _task(reader: Optional[str]) -> Optional[str]:
    """The reader's type: "sst2" for `sst2` and for `{"type": "sst2", ...}`."""
    if not reader:
        return None
    text = reader.strip()
    if not text.startswith("{"):
        return text
    try:
        return str(json.loads(text).get("type") or "") or None
    except json.JSONDecodeError:
        return None
