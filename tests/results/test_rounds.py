"""
Seeds in rounds (`allennlp_tune.experiments.rounds`, `tune-compare --sequential`) through the real
grid with its seams: a fake `allennlp train` (`runner`) and a fake `predict` that writes
synthetic dev predictions whose accuracy is each mode's true accuracy plus a per-seed shift. No
training; each test takes a few seconds (the bootstrap behind each look).
"""

import argparse
import json
import re
from pathlib import Path

import numpy as np
import pytest
from allennlp.common.checks import ConfigurationError

from allennlp_tune.commands.tune_compare import add_compare_parser
from allennlp_tune.experiments.comparison import Comparison
from allennlp_tune.experiments.rounds import SEQUENTIAL_NAME, run_sequential
from allennlp_tune.reporting.render import render_markdown
from allennlp_tune.reporting.report import report_from_dirs
from allennlp_tune.reporting.sequential import AT_CAP, EQUIVALENT, FUTILE, SequentialPlan
from allennlp_tune.rundir import parse_run_name

PLAN = SequentialPlan(looks=(3, 5, 7))
# Without the futility rule: the rounds' own mechanics up to the cap.
TO_CAP = SequentialPlan(looks=(3, 5, 7), futility=0.0)
# One fixed random stream: these tests check the rounds' mechanics on one comparison of each
# kind; the procedure's error rates over many comparisons are tests/results/test_sequential.py's.
# (At a true difference of 0, 1 comparison in 20 may say "better": stream 0 of the old seeding,
# [mode, seed], was one, so the null tests would have tested a false verdict.)
STREAM = 1
EXAMPLES = 1500
CONFIG = """{
  random_seed: std.parseInt(std.extVar("TUNE_SEED")),
  trainer: {validation_metric: "+accuracy"},
}"""


class FakeTraining:
    """Stands in for `allennlp train`: writes what it would, records calls, can be killed."""

    def __init__(self, interrupt_at=None, fail=(), seconds=None):
        self.calls, self.interrupt_at, self.fail = [], interrupt_at, set(fail)
        self.seconds = seconds or {}  # mode -> the training seconds its cost.json records

    def __call__(self, command, environment, log_path):
        run_dir = Path(command[command.index("-s") + 1])
        seed = int(environment["TUNE_SEED"])
        self.calls.append((parse_run_name(run_dir.parent.name)[0].mode, seed))
        log_path.write_text("training\n")
        run_dir.mkdir()
        (run_dir / "config.json").write_text(
            json.dumps({"random_seed": seed, "trainer": {"validation_metric": "+accuracy"}})
        )
        if len(self.calls) == self.interrupt_at:
            raise KeyboardInterrupt  # killed while this run trained
        if self.calls[-1] in self.fail:
            log_path.write_text("training\nRuntimeError: boom\n")
            return 1
        accuracy = 0.8 + seed / 1000
        (run_dir / "metrics.json").write_text(json.dumps({"best_validation_accuracy": accuracy}))
        (run_dir / "model.tar.gz").write_bytes(b"")
        mode = self.calls[-1][0]
        if mode in self.seconds:  # two epochs
            epochs = [self.seconds[mode] / 2] * 2
            (run_dir / "cost.json").write_text(json.dumps({"epoch_seconds": epochs}))
        return 0


def synthetic_predict(accuracies, seed_sd=0.007):
    """A `predict` seam: mode m's seed s is right on each dev example with probability
    accuracies[m] + a per-seed shift (sd `seed_sd`), drawn reproducibly from (m, s)."""
    gold = np.random.default_rng(0).integers(0, 2, EXAMPLES)

    def predict(run_dir, environment, log_path):
        mode = parse_run_name(run_dir.parent.name)[0].mode
        seed = int(run_dir.name.split("_")[1])
        rng = np.random.default_rng([STREAM, sorted(accuracies).index(mode), seed])
        right = rng.random(EXAMPLES) < accuracies[mode] + rng.normal(0, seed_sd)
        labels = ["no", "yes"]
        with open(run_dir / "dev_predictions.jsonl", "w") as handle:
            for i, (g, ok) in enumerate(zip(gold, right)):
                prediction = labels[g] if ok else labels[1 - g]
                handle.write(json.dumps({"index": i, "gold": labels[g], "prediction": prediction}))
                handle.write("\n")
        # A real run's score is its archive's on these predictions (`reporting.verify` checks).
        metrics = {"best_validation_accuracy": float(right.mean())}
        (run_dir / "metrics.json").write_text(json.dumps(metrics))
        return None

    return predict


def configs_for(folder: Path, modes):
    folder.mkdir(parents=True, exist_ok=True)
    configs = {}
    for mode in modes:
        path = folder / f"reviews_bert_{mode}.jsonnet"
        path.write_text(CONFIG)
        configs[mode] = path
    return configs


def compare(tmp_path, accuracies, runner, margin=None, plan=PLAN):
    configs = configs_for(tmp_path / "configs", list(accuracies))
    return run_sequential(
        configs,
        range(1, 8),
        tmp_path / "out",
        plan,
        margin,
        runner=runner,
        predict=synthetic_predict(accuracies),
        progress=False,
        plan=False,
    )


def trained(runner, mode):
    return sorted(seed for m, seed in runner.calls if m == mode)


def test_a_large_difference_stops_at_the_first_look(tmp_path, capsys):
    runner = FakeTraining()
    result = compare(tmp_path, {"fe": 0.80, "ft": 0.90}, runner)
    [look] = result.looks[("ft", "fe")]
    assert look.verdict == "ft" and look.seeds_a == look.seeds_b == 3
    assert trained(runner, "fe") == trained(runner, "ft") == [1, 2, 3]
    assert len(result.grid.trained) == 6 and not result.grid.skipped
    err = capsys.readouterr().err
    assert "look 1 of 3 (3 seeds per mode): ft − fe ft better: +" in err
    saved = json.loads((tmp_path / "out" / SEQUENTIAL_NAME).read_text())
    assert saved["pairs"][0]["verdict"] == "ft" and saved["pairs"][0]["seeds"] == 3
    assert saved["seeds_trained"] == {"fe": 3, "ft": 3} and saved["runs_at_cap"] == 14
    # tune-report shows the sequential verdict beside the fixed interval.
    markdown = render_markdown(report_from_dirs([tmp_path / "out"]))
    assert "## Sequential comparison (seeds in rounds)" in markdown
    assert "BERT reviews ft − fe: ft better" in markdown and "after 3 seeds each" in markdown


def test_a_null_difference_runs_to_the_cap_without_the_futility_rule(tmp_path):
    runner = FakeTraining()
    result = compare(tmp_path, {"fe": 0.85, "ft": 0.85}, runner, plan=TO_CAP)
    looks = result.looks[("ft", "fe")]
    assert [look.seeds_a for look in looks] == [3, 5, 7]
    assert looks[-1].decision == AT_CAP
    assert trained(runner, "fe") == trained(runner, "ft") == list(range(1, 8))
    # A file from before the rule (no futility in its plan, no chance in its looks) is read as
    # it was: its looks recomputed from the runs without the rule agree with the stored ones.
    path = tmp_path / "out" / SEQUENTIAL_NAME
    saved = json.loads(path.read_text())
    assert saved["plan"]["futility"] == 0.0
    del saved["plan"]["futility"]
    for stored in saved["pairs"][0]["looks"]:
        assert stored.pop("power") is None or stored["seeds_a"] < 7
    path.write_text(json.dumps(saved))
    built = report_from_dirs([tmp_path / "out"])
    assert built.broken == [] and len(built.sequential) == 1
    assert "undecided at the seed cap" in render_markdown(built)


def test_a_null_difference_stops_as_futile(tmp_path, capsys):
    """The same tie with the default rule: the first look's chance that 7 seeds would decide
    is under 10%, so the pair stops there, 6 runs instead of 14; sequential.json keeps the rule
    and the chance, and the report (which recomputes the looks from the runs) shows them."""
    runner = FakeTraining()
    result = compare(tmp_path, {"fe": 0.85, "ft": 0.85}, runner)
    [look] = result.looks[("ft", "fe")]
    assert look.decision == FUTILE and look.verdict == "undecided" and look.seeds_a == 3
    assert look.power < PLAN.futility
    assert trained(runner, "fe") == trained(runner, "ft") == [1, 2, 3]
    assert "ft − fe undecided, futile (a " in capsys.readouterr().err
    saved = json.loads((tmp_path / "out" / SEQUENTIAL_NAME).read_text())
    assert saved["plan"]["futility"] == PLAN.futility
    assert saved["pairs"][0]["decision"] == FUTILE
    assert saved["pairs"][0]["looks"][0]["power"] == pytest.approx(look.power)
    built = report_from_dirs([tmp_path / "out"])
    assert built.broken == []
    markdown = render_markdown(built)
    assert "BERT reviews ft − fe: undecided, futile (a " in markdown
    assert "stopped at look 1 of 3, after 3 seeds each" in markdown
    assert "a pair stops as futile before the cap" in markdown


def test_a_mode_stops_once_all_its_pairs_have_stopped(tmp_path, capsys):
    """fe is far behind: its two pairs stop at the first look and it trains no more seeds,
    while lora against ft (equally good) goes on to the cap."""
    runner = FakeTraining(seconds={"fe": 600, "ft": 900, "lora": 300})
    result = compare(tmp_path, {"fe": 0.75, "ft": 0.88, "lora": 0.88}, runner, plan=TO_CAP)
    assert [look.verdict for look in result.looks[("ft", "fe")]] == ["ft"]
    assert [look.verdict for look in result.looks[("lora", "fe")]] == ["lora"]
    assert [look.seeds_a for look in result.looks[("lora", "ft")]] == [3, 5, 7]
    assert trained(runner, "fe") == [1, 2, 3]
    assert trained(runner, "ft") == trained(runner, "lora") == list(range(1, 8))
    assert result.seeds == {"fe": 3, "ft": 7, "lora": 7}
    err = capsys.readouterr().err.splitlines()
    lines = [line for line in err if ": look " in line]
    assert len(lines) == 3 and "ft − fe" in lines[0] and "ft − fe" not in lines[1]
    # After each look but the last: what the next one trains and how long, at each open mode's
    # measured runs (fe, stopped, is not in it): 2 x 900 s + 2 x 300 s.
    ahead = [line for line in err if ": next look at " in line]
    tail = "until then the look above is not a verdict where it did not stop"
    assert ahead == [
        f"tune-compare: next look at {seeds} seeds per mode: 2 more seed(s) of ft, lora, about "
        f"40 min of training (at each mode's mean run so far, {runs} runs measured); {tail}"
        for seeds, runs in ((5, 6), (7, 10))
    ]


def test_a_killed_comparison_resumes_without_retraining_finished_seeds(tmp_path):
    accuracies = {"fe": 0.85, "ft": 0.85}
    killed = FakeTraining(interrupt_at=8)  # round 2 (seeds 4, 5): killed while ft seed 4 trains
    with pytest.raises(KeyboardInterrupt):
        compare(tmp_path, accuracies, killed, plan=TO_CAP)
    assert killed.calls[-1] == ("ft", 4)
    first = json.loads((tmp_path / "out" / SEQUENTIAL_NAME).read_text())
    assert [look["seeds_a"] for look in first["pairs"][0]["looks"]] == [3]

    rerun = FakeTraining()
    result = compare(tmp_path, accuracies, rerun, plan=TO_CAP)
    assert rerun.calls == [("ft", 4), ("fe", 5), ("ft", 5), ("fe", 6), ("ft", 6)] + [
        ("fe", 7),
        ("ft", 7),
    ]
    # The same looks as a comparison that was never killed.
    whole = FakeTraining()
    fresh = compare(tmp_path / "again", accuracies, whole, plan=TO_CAP)
    assert [look.as_dict() for look in result.looks[("ft", "fe")]] == [
        look.as_dict() for look in fresh.looks[("ft", "fe")]
    ]
    # A finished comparison rerun trains nothing.
    idle = FakeTraining()
    again = compare(tmp_path, accuracies, idle, plan=TO_CAP)
    assert idle.calls == [] and len(again.grid.skipped) == 14 and not again.grid.trained


def test_equivalence_within_a_margin_stops_early(tmp_path):
    runner = FakeTraining()
    result = compare(tmp_path, {"fe": 0.85, "ft": 0.85}, runner, margin=4.0)
    last = result.looks[("ft", "fe")][-1]
    assert last.decision == EQUIVALENT and last.seeds_a < PLAN.cap
    assert len(trained(runner, "ft")) == last.seeds_a


def parse(argv):
    parser = argparse.ArgumentParser()
    add_compare_parser(parser.add_subparsers(), "tune-compare")
    return parser.parse_args(["tune-compare", "sst2", "--encoder", "x", *argv])


def from_command_line(argv) -> Comparison:
    return Comparison.from_args(parse(["--results-dir", "out", *argv]), {})


def test_the_command_line_plan_and_its_seeds(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    comparison = from_command_line([])
    assert comparison._plan is None and comparison.seeds == (1, 2, 3)
    comparison = from_command_line(["--sequential"])
    assert comparison._plan.looks == (3, 5, 7) and comparison.seeds == tuple(range(1, 8))
    comparison = from_command_line(
        ["--sequential", "--looks", "2", "4", "--seeds", "9", "8", "7", "6"]
    )
    assert comparison._plan.cap == 4 and comparison.seeds == (9, 8, 7, 6)
    assert from_command_line(["--sequential"])._plan.futility == 0.1
    assert from_command_line(["--sequential", "--futility", "0"])._plan.futility == 0.0
    for argv, message in (
        (["--looks", "3", "5"], "--looks needs --sequential"),
        (["--sequential", "--seeds", "1", "2", "3"], "list at least 7 seeds"),
        (["--sequential", "--looks", "5", "3"], "--looks 5 3: looks must be increasing"),
        (["--futility", "0.2"], "--futility needs --sequential"),
        (["--sequential", "--futility", "1"], "--futility 1: futility must lie in [0, 1)"),
    ):
        with pytest.raises(ConfigurationError, match=re.escape(message)):
            from_command_line(argv)
    # The command ends on them in one line, exit 2, before anything is written.
    args = parse(["--results-dir", "out", "--looks", "3", "5"])
    with pytest.raises(SystemExit) as exit_info:
        args.func(args)
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == "allennlp tune-compare: --looks needs --sequential.\n"
    assert not Path("out").exists()


def test_run_compare_with_a_sequential_plan(tmp_path):
    """tune-compare's own path: a task file of one's own, modes given in any order (the pairs
    are the report's, ft − fe), the grid's fake training rendering each real config."""
    from allennlp_tune.experiments.compare import run_compare
    from tests.results.test_compare import BERT, write_reviews
    from tests.results.test_grid import FakeTraining as RenderingTraining

    task = write_reviews(tmp_path / "task")
    runner = RenderingTraining()
    result = run_compare(
        str(task),
        str(BERT),
        ["ft", "fe"],
        range(1, 8),
        tmp_path / "out",
        sequential=PLAN,
        runner=runner,
        predict=synthetic_predict({"fe": 0.80, "ft": 0.90}),
        progress=False,
        plan=False,
    )
    assert sorted(runner.calls) == [
        (f"reviews_bertuncased_{mode}", seed) for mode in ("fe", "ft") for seed in (1, 2, 3)
    ]
    assert len(result.trained) == 6 and not result.failed
    saved = json.loads((tmp_path / "out" / SEQUENTIAL_NAME).read_text())
    assert (saved["task"], saved["encoder"]) == ("reviews", "bertuncased")
    [pair] = saved["pairs"]
    assert (pair["mode_a"], pair["mode_b"], pair["verdict"], pair["seeds"]) == ("ft", "fe", "ft", 3)


def test_a_failed_seed_stops_the_rounds_before_its_look_and_a_rerun_retries_it(tmp_path, capsys):
    accuracies = {"fe": 0.80, "ft": 0.90}
    failing = FakeTraining(fail={("fe", 2)})
    result = compare(tmp_path, accuracies, failing)
    assert result.looks[("ft", "fe")] == [] and len(result.grid.failed) == 1
    assert "reviews_bert_fe/seed_2 (failed; log: " in result.problem
    assert "sequential comparison stopped: " in capsys.readouterr().err
    saved = json.loads((tmp_path / "out" / SEQUENTIAL_NAME).read_text())
    assert saved["problem"] == result.problem and saved["pairs"][0]["looks"] == []
    markdown = render_markdown(report_from_dirs([tmp_path / "out"]))
    assert "BERT reviews ft − fe: no look yet; open after look 0 of 3" in markdown
    assert "BERT reviews: stopped early: " in markdown
    retry = FakeTraining()
    again = compare(tmp_path, accuracies, retry)
    assert retry.calls == [("fe", 2)] and again.looks[("ft", "fe")][-1].verdict == "ft"


def test_modes_without_a_pair_are_refused(tmp_path):
    with pytest.raises(ConfigurationError, match="add fe or ft to --modes"):
        compare(tmp_path, {"sf": 0.8, "bitfit": 0.8}, FakeTraining())


def test_every_rounds_plan_counts_the_seeds_up_to_the_last_look(tmp_path, monkeypatch):
    """The first round trains 3 seeds per mode, but its plan (and so its estimated total)
    counts all 7 the rounds may train; the planner's other inputs are the round's."""
    from allennlp_tune.experiments import grid

    planned = []

    def planner(configs, seeds, *args, **kwargs):
        planned.append(list(seeds))
        return {}

    monkeypatch.setattr(grid, "_plan_before_training", planner)
    configs = configs_for(tmp_path / "configs", ["fe", "ft"])
    runner = FakeTraining()
    run_sequential(
        configs,
        range(1, 8),
        tmp_path / "out",
        PLAN,
        None,
        runner=runner,
        predict=synthetic_predict({"fe": 0.80, "ft": 0.90}),
        progress=False,
        calibrate=False,
    )
    assert trained(runner, "fe") == [1, 2, 3]  # the large difference stops at the first look
    assert planned == [[1, 2, 3, 4, 5, 6, 7]]
