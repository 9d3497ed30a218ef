"""
Block modes (`topK`, `bottomK`) as run modes: their names read back, and the report gives them
columns after the others, pairs against fe and ft, and a title in the answer.
"""

import json

import pytest

from allennlp_tune.modes import block_groups, is_run_mode, ordered_run_modes
from allennlp_tune.reporting.answer import ANSWER_TITLE, choose_arm
from allennlp_tune.reporting.render import render_json, render_markdown
from allennlp_tune.rundir import RunName, parse_run_name
from tests.results.test_report_verdict import make, notes, report, table, wrong_every


@pytest.mark.parametrize(
    "mode, groups",
    [("top1", "top:1"), ("top12", "top:12"), ("bottom2", "bottom:2"), ("ft", None),
     ("top", None), ("top0", None), ("top100", None), ("middle2", None), ("Top1", None)],
)  # fmt: skip
def test_block_modes_and_their_groups(mode, groups):
    assert block_groups(mode) == groups
    assert is_run_mode(mode) == (groups is not None or mode == "ft")
    if groups is not None:
        assert parse_run_name(f"my_task_minilm_{mode}") == (
            RunName("my_task", "minilm", mode),
            None,
        )


def test_the_report_order_puts_blocks_after_the_modes_top_before_bottom_by_size():
    modes = ["bottom1", "top12", "lora", "top2", "fe", "ft", "bottom10", "bottom2"]
    assert ordered_run_modes(modes) == [
        "fe", "ft", "lora", "top2", "top12", "bottom1", "bottom2", "bottom10",
    ]  # fmt: skip


def test_a_block_mode_gets_a_column_pairs_and_the_answer(tmp_path, make_run):
    """fe wrong on every third example, ft on every tenth, top1 as good as ft: top1 beats fe,
    ties ft, and is the cheaper arm (fewer trainable parameters)."""
    root = tmp_path / "runs"
    for seed in (1, 2, 3):
        fe = make(make_run, root, "reviews_minilm_fe", seed, wrong_every(3, seed))
        ft = make(make_run, root, "reviews_minilm_ft", seed, wrong_every(10, seed))
        top = make(make_run, root, "reviews_minilm_top1", seed, wrong_every(10, seed))
        for run_dir, (seconds, params) in ((fe, (5.0, 1e4)), (ft, (40.0, 2e7)), (top, (20.0, 3e6))):
            (run_dir / "cost.json").write_text(
                f'{{"trainable_params": {params}, "total_params": 2.3e7, '
                f'"mean_epoch_seconds": {seconds}}}'
            )
    rendered = report(root)
    markdown = render_markdown(rendered)
    header, rows = table(markdown, "minilm")
    assert header[-1] == "top1 (ours)" and rows["reviews"]["top1 (ours)"].endswith("(n=3)")
    pairs = {(r.mode_a, r.mode_b): r for r in rendered.rows()[0].paired}
    assert pairs[("top1", "fe")].verdict == "top1"
    assert pairs[("top1", "ft")].verdict == "tie"
    assert choose_arm(rendered.rows()[0]) == "top1"
    (sentence,) = [line for line in notes(markdown, ANSWER_TITLE) if line.startswith("minilm")]
    assert "use top1 (top 1 layer group fine-tuned)" in sentence
    assert '"top1"' in json.dumps(render_json(rendered))
