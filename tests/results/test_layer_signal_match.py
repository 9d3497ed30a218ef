"""
The layer signal against the sweep (`allennlp_tune.reporting.layer_signal`): per block size K
with scored topK and bottomK runs, whether tune-layers' prediction names the block with the
better mean dev score, beside the always-topK baseline, in the report's notes.
"""

import json

from allennlp_tune.reporting.layer_signal import (
    LAYER_SIGNAL_NAME,
    SIGNAL_TITLE,
    block_matches,
    with_signal,
)
from allennlp_tune.reporting.render import render_markdown
from allennlp_tune.reporting.report import report_from_dirs


def signal(task="reviews", encoder="minilm", predicted=("bottom1", "top2", "bottom3")):
    return {
        "task": task,
        "encoder": encoder,
        "blocks": [{"k": k, "predicted": mode} for k, mode in enumerate(predicted, start=1)],
    }


def sweep(root, make_run, scores, metric="+accuracy"):
    """Runs `reviews_minilm_<mode>/seed_<s>` with the given scores per mode, one per seed."""
    for mode, values in scores.items():
        for seed, value in enumerate(values, start=1):
            make_run(root / f"reviews_minilm_{mode}" / f"seed_{seed}", seed, value, metric=metric)


def notes(markdown: str):
    section = markdown.split(f"## {SIGNAL_TITLE}\n\n", 1)[1].split("\n\n", 1)[0]
    return [line[2:] for line in section.splitlines()]


def test_the_prediction_is_checked_against_the_better_mean_of_each_size(tmp_path, make_run):
    # K=1: bottom1 better (mean 0.80 vs 0.70); K=2: top2 better; K=3: bottom3 has no run.
    sweep(
        tmp_path,
        make_run,
        {
            "fe": [0.6, 0.6],
            "ft": [0.9, 0.9],
            "top1": [0.70, 0.70],
            "bottom1": [0.78, 0.82],
            "top2": [0.85, 0.87],
            "bottom2": [0.80, 0.80],
            "top3": [0.88, 0.88],
        },
    )
    (tmp_path / LAYER_SIGNAL_NAME).write_text(json.dumps({"signals": [signal()]}))
    report = report_from_dirs([tmp_path], intervals=False)
    (row,) = report.rows()
    matches = block_matches(report.layer_signals[0]["signals"][0], row)
    assert [(m["k"], m["predicted"], m["best"], m["match"], m["top_match"]) for m in matches] == [
        (1, "bottom1", "bottom1", True, False),
        (2, "top2", "top2", True, True),
    ]
    assert matches[0]["scores"] == {"top1": 70.0, "bottom1": 80.0}
    (line,) = notes(render_markdown(report))
    assert line == (
        "minilm reviews: K=1: predicted bottom1, best bottom1 (top1 70.0 vs bottom1 80.0); K=2: "
        "predicted top2, best top2 (top2 86.0 vs bottom2 80.0). RGN picked the sweep's best "
        "block in 2 of 2 sizes, always-topK in 1 of 2: better than always picking topK."
    )


def test_a_signal_no_better_than_top_says_so_and_lower_is_better_metrics(tmp_path, make_run):
    # A loss (lower is better): bottom1 has the lower mean, so it is the sweep's best.
    sweep(tmp_path, make_run, {"top1": [0.5], "bottom1": [0.4]}, metric="-loss")
    saved = with_signal(None, signal(predicted=("top1",)))
    saved = with_signal(saved, signal(task="other", predicted=("bottom1",)))
    saved = with_signal(saved, signal(predicted=("top1",)))  # replaces the first
    assert [entry["task"] for entry in saved["signals"]] == ["other", "reviews"]
    (tmp_path / LAYER_SIGNAL_NAME).write_text(json.dumps(saved))
    (line,) = notes(render_markdown(report_from_dirs([tmp_path], intervals=False)))
    assert line.endswith(
        "RGN picked the sweep's best block in 0 of 1 sizes, always-topK in 0 of 1: no better "
        "than always picking topK."
    )
    assert "best bottom1 (top1 0.5 vs bottom1 0.4)" in line


def test_without_both_blocks_of_a_size_the_note_says_so(tmp_path, make_run):
    sweep(tmp_path, make_run, {"ft": [0.9], "top1": [0.8]})
    (tmp_path / LAYER_SIGNAL_NAME).write_text(json.dumps({"signals": [signal()]}))
    (line,) = notes(render_markdown(report_from_dirs([tmp_path], intervals=False)))
    assert line == (
        "minilm reviews: tune-layers predicted bottom1, top2, bottom3; no size K has scored "
        "runs of both topK and bottomK to check it against."
    )
    (tmp_path / LAYER_SIGNAL_NAME).unlink()
    assert SIGNAL_TITLE not in render_markdown(report_from_dirs([tmp_path], intervals=False))


def test_several_rows_get_a_total(tmp_path, make_run):
    sweep(tmp_path, make_run, {"top1": [0.7], "bottom1": [0.8]})  # bottom1 best
    for mode, value in (("top1", 0.9), ("bottom1", 0.6)):  # top1 best
        make_run(tmp_path / f"other_minilm_{mode}" / "seed_1", 1, value)
    saved = with_signal(None, signal(predicted=("bottom1",)))
    saved = with_signal(saved, signal(task="other", predicted=("bottom1",)))
    (tmp_path / LAYER_SIGNAL_NAME).write_text(json.dumps(saved))
    lines = notes(render_markdown(report_from_dirs([tmp_path], intervals=False)))
    assert len(lines) == 3 and lines[0].startswith("minilm other: ")
    assert lines[2] == (
        "Over 2 rows: RGN picked the sweep's best block in 1 of 2 sizes, always-topK in 1: no "
        "better than always picking topK."
    )
