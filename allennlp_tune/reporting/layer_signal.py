"""
The layer signal measured against the sweep: does the block that `allennlp tune-layers`
predicts from the relative gradient norm (`allennlp_tune.analysis.layer_signal`) match the
block the block-mode runs found best?

`tune-layers --results-dir DIR` keeps its signals in `DIR/layer_signal.json`
(`LAYER_SIGNAL_NAME`): `{"signals": [...]}`, one entry per task and encoder label (as run names
carry them), each with its per-group RGN and `blocks`, the predicted block per size K. For a
report row of the same task and encoder, each size K whose `topK` and `bottomK` cells both have
scored runs is compared: the sweep's best block is the one with the better mean dev score (the
report's cell mean; lower is better for a metric shown as it is, such as a loss), and the
prediction matches when it names it. Beside it, the baseline that needs no signal: always
`topK`. `signal_lines` says, per row, how often each was right, and whether the signal did
better than the baseline.
"""

from typing import Any, Dict, List, Optional, Sequence

from allennlp_tune.reporting.cells import Row
from allennlp_tune.reporting.labels import encoder_title, task_title

LAYER_SIGNAL_NAME = "layer_signal.json"
SIGNAL_TITLE = "Layer signal (RGN) against the block sweep"


def with_signal(saved: Optional[Dict[str, Any]], entry: Dict[str, Any]) -> Dict[str, Any]:
    """`saved` (a `layer_signal.json`, or `None`) with `entry` replacing the one of its task
    and encoder, or added."""
    signals = [
        signal
        for signal in (saved or {}).get("signals") or []
        if isinstance(signal, dict)
        and (signal.get("task"), signal.get("encoder")) != (entry["task"], entry["encoder"])
    ]
    return {"signals": [*signals, entry]}


def _better(row: Row, mode_a: str, mode_b: str) -> Optional[str]:
    """The mode of the two with the better mean score, `None` when either has none or a tie."""
    a, b = row.cells.get(mode_a), row.cells.get(mode_b)
    if a is None or b is None or a.mean is None or b.mean is None or a.mean == b.mean:
        return None
    higher = a.as_percent and b.as_percent  # otherwise shown as it is, lower is better
    return mode_a if (a.mean > b.mean) == higher else mode_b


def block_matches(signal: Dict[str, Any], row: Row) -> List[Dict[str, Any]]:
    """
    Per size K of the signal whose `topK` and `bottomK` cells both have a mean score (and
    differ): the predicted block, the sweep's best, their means, and whether the prediction and
    the always-`topK` baseline match it.
    """
    matches = []
    for block in signal.get("blocks") or []:
        k = block.get("k")
        top, bottom = f"top{k}", f"bottom{k}"
        best = _better(row, top, bottom)
        if best is None:
            continue
        matches.append(
            {
                "k": k,
                "predicted": block.get("predicted"),
                "best": best,
                "scores": {top: row.cells[top].mean, bottom: row.cells[bottom].mean},
                "match": block.get("predicted") == best,
                "top_match": best == top,
            }
        )
    return matches


def _signal_of(signals: Sequence[Dict[str, Any]], encoder: str, task: str):
    found = [
        entry
        for saved in signals
        for entry in saved.get("signals") or []
        if isinstance(entry, dict) and (entry.get("encoder"), entry.get("task")) == (encoder, task)
    ]
    return found[-1] if found else None


def signal_lines(
    signals: Sequence[Dict[str, Any]], encoder_rows: Dict[str, List[Row]]
) -> List[str]:
    """
    One line per report row that has a saved signal: each compared size (predicted vs the
    sweep's best, with their mean scores), how often the signal and the always-`topK` baseline
    matched, and whether the signal did better than the baseline; with several such rows, the
    same counts over all of them.
    """
    lines = []
    totals = {"rows": 0, "sizes": 0, "hits": 0, "top_hits": 0}
    for encoder, rows in encoder_rows.items():
        for row in rows:
            signal = _signal_of(signals, encoder, row.task)
            if signal is None:
                continue
            label = f"{encoder_title(encoder)} {task_title(row.task)}"
            matches = block_matches(signal, row)
            if not matches:
                lines.append(
                    f"{label}: tune-layers predicted "
                    + ", ".join(str(b.get("predicted")) for b in signal.get("blocks") or [])
                    + "; no size K has scored runs of both topK and bottomK to check it against."
                )
                continue
            parts = [
                f"K={m['k']}: predicted {m['predicted']}, best {m['best']} ("
                + " vs ".join(f"{mode} {score:.1f}" for mode, score in m["scores"].items())
                + ")"
                for m in matches
            ]
            hits = sum(m["match"] for m in matches)
            top_hits = sum(m["top_match"] for m in matches)
            for key, value in (("rows", 1), ("sizes", len(matches)), ("hits", hits)):
                totals[key] += value
            totals["top_hits"] += top_hits
            verdict = (
                "better than always picking topK"
                if hits > top_hits
                else "no better than always picking topK"
            )
            lines.append(
                f"{label}: {'; '.join(parts)}. RGN picked the sweep's best block in {hits} of "
                f"{len(matches)} sizes, always-topK in {top_hits} of {len(matches)}: {verdict}."
            )
    if totals["rows"] > 1:
        better = totals["hits"] > totals["top_hits"]
        lines.append(
            f"Over {totals['rows']} rows: RGN picked the sweep's best block in {totals['hits']} "
            f"of {totals['sizes']} sizes, always-topK in {totals['top_hits']}: "
            + ("better than" if better else "no better than")
            + " always picking topK."
        )
    return lines


__all__ = ["LAYER_SIGNAL_NAME", "SIGNAL_TITLE", "block_matches", "signal_lines", "with_signal"]
