"""Per-layer line plots like Figures 1 and 2 of Peters, Ruder & Smith (2019), written as PNG."""

from typing import Dict, Optional, Sequence

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
