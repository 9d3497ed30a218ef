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


def test_with_a_margin_the_answer_names_the_cheapest_arm_within_it_of_the_best(tmp_path, make_run):
    """On 120 examples, three seeds: ft wrong on every 20th, top2 on every 15th (a tie, its
    interval against ft about -1.7 [-5.4, +2.8]), top1 on every 10th (ft beats it: about -5.0
    [-8.6, -0.8]); top1 is the cheapest, ft the dearest. With no margin the cheapest unbeaten
    arm, top2; with a margin, the cheapest whose interval against ft stays above -margin: ft at
    3 points (even top2's reaches below), top2 at 6, top1 at 9 (behind ft, but by less than 9)."""
    root = tmp_path / "runs"
    costs = {"ft": (40.0, 2e7), "top2": (24.0, 6e6), "top1": (12.0, 3e6)}
    for seed in (1, 2, 3):
        for mode, every in (("ft", 20), ("top1", 10), ("top2", 15)):
            run = make(make_run, root, f"reviews_minilm_{mode}", seed, wrong_every(every, seed))
            seconds, params = costs[mode]
            (run / "cost.json").write_text(
                f'{{"trainable_params": {params}, "total_params": 2.3e7, '
                f'"mean_epoch_seconds": {seconds}}}'
            )
    plain = report(root).rows()[0]
    pairs = {(r.mode_a, r.mode_b): r for r in plain.paired}
    top1, top2 = pairs[("top1", "ft")], pairs[("top2", "ft")]
    assert top1.verdict == "ft" and -9 < top1.low < -6 and top1.high < 0, top1
    assert top2.verdict == "tie" and -6 < top2.low < -3 and top2.high > 0, top2
    assert choose_arm(plain) == "top2"
    for margin, arm in ((3.0, "ft"), (6.0, "top2"), (9.0, "top1")):
        rendered = report(root, margin=margin)
        assert choose_arm(rendered.rows()[0], margin) == arm, margin
        (sentence,) = [
            line
            for line in notes(render_markdown(rendered), ANSWER_TITLE)
            if line.startswith("minilm")
        ]
        assert f"use {arm} " in sentence, sentence
        if arm == "ft":
            assert "no cheaper arm is within 3 points of it" in sentence, sentence
            assert "beats top1 by" in sentence and "ties top2" in sentence, sentence
        else:
            assert f"not worse than the best, ft, by more than {margin:g} points" in sentence
            assert "against ft 40.0 s/epoch" in sentence, sentence  # its cost beside ft's
        if arm == "top1":
            assert "is behind ft by -5.0 [" in sentence, sentence
