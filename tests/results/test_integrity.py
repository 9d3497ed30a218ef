"""
Results that prove themselves (`rundir.digests`, `reporting.verify`, `reporting.saved`): a run
whose files are not what it left when it finished is "damaged" (named with what failed, in no
score or verdict, moved aside and trained again by a rerun), and a `sequential.json` or
`budget.json` that its runs and trials do not bear out is "broken" (named, left out).

The runs come from the real grid with its seams: a fake `allennlp train` whose score is the one
its fake dev predictions give (as a real trainer's is its archive's), so every run is intact
until a test changes a file the way a hand edit, a full disk or a bad copy would. Each case is
tried on runs recorded with digests and, where it matters, on runs recorded before them
(`outputs` removed from `tune_run.json`), whose scores are still recomputed.
"""

import json
import math
from pathlib import Path

import pytest

from allennlp_tune.experiments.grid import run_grid
from allennlp_tune.experiments.rounds import run_rounds
from allennlp_tune.planning.plan import render_config
from allennlp_tune.reporting.render import render_json, render_markdown
from allennlp_tune.reporting.report import report_from_dirs
from allennlp_tune.reporting.sequential import Look, SequentialPlan
from allennlp_tune.rundir import load_run, parse_run_name

# `tune_run.json`'s digests (`rundir.OUTPUTS_KEY`), spelled out so this file also runs, and
# fails, against a checkout from before them.
OUTPUTS_KEY = "outputs"
CONFIG = """{
  random_seed: std.parseInt(std.extVar("TUNE_SEED")),
  trainer: {validation_metric: "+accuracy"},
}"""
EXAMPLES = 40
# Examples each run gets right, by mode and seed: fe 50%, ft 70-80%.
RIGHT = {"fe": {1: 20, 2: 21, 3: 19}, "ft": {1: 28, 2: 30, 3: 32}}
GOLD = ["pos" if i % 2 else "neg" for i in range(EXAMPLES)]


def _mode_seed(run_dir: Path):
    return parse_run_name(run_dir.parent.name)[0].mode, int(run_dir.name.split("_")[1])


def predictions_of(mode: str, seed: int):
    """The run's dev predictions: right on the first RIGHT[mode][seed] examples."""
    right = RIGHT[mode][seed]
    flip = {"pos": "neg", "neg": "pos"}
    return [gold if i < right else flip[gold] for i, gold in enumerate(GOLD)]


def write_predictions(run_dir: Path, predictions) -> None:
    with open(run_dir / "dev_predictions.jsonl", "w") as handle:
        for i, (gold, predicted) in enumerate(zip(GOLD, predictions)):
            handle.write(json.dumps({"index": i, "gold": gold, "prediction": predicted}) + "\n")


class Training:
    """`allennlp train` as the grid sees it: config.json, metrics.json, an archive."""

    def __init__(self):
        self.calls = []

    def __call__(self, command, environment, log_path):
        run_dir = Path(command[command.index("-s") + 1])
        mode, seed = _mode_seed(run_dir)
        self.calls.append((mode, seed))
        log_path.write_text("training\n")
        run_dir.mkdir()
        config_path = Path(command[command.index("train") + 1])
        config = render_config(config_path, environment, None)
        (run_dir / "config.json").write_text(json.dumps(config))
        accuracy = RIGHT[mode][seed] / EXAMPLES
        metrics = {"best_epoch": 1, "epoch": 2, "best_validation_accuracy": accuracy}
        (run_dir / "metrics.json").write_text(json.dumps(metrics))
        (run_dir / "model.tar.gz").write_bytes(b"weights " * 64)
        return 0


def predict(run_dir, environment, log_path):
    write_predictions(run_dir, predictions_of(*_mode_seed(run_dir)))
    return None


@pytest.fixture
def configs(tmp_path):
    folder = tmp_path / "configs"
    folder.mkdir()
    paths = {mode: folder / f"sick_e_bow_{mode}.jsonnet" for mode in ("fe", "ft")}
    for path in paths.values():
        path.write_text(CONFIG)
    return paths


def grid(configs, results, seeds=(1, 2, 3), training=None):
    training = training or Training()
    result = run_grid(
        list(configs.values()),
        list(seeds),
        results,
        runner=training,
        predict=predict,
        plan=False,
        progress=False,
    )
    return training, result


def report(results):
    built = report_from_dirs([results], replicates=300)
    return built, render_markdown(built)


def run_dir(results, mode, seed):
    return results / f"sick_e_bow_{mode}" / f"seed_{seed}"


def forget_digests(results):
    """Every run as recorded before digests: no `outputs` in its tune_run.json."""
    for info_path in results.glob("*/seed_*/tune_run.json"):
        info = json.loads(info_path.read_text())
        info.pop(OUTPUTS_KEY, None)
        info_path.write_text(json.dumps(info))


def edit_json(path, change):
    saved = json.loads(path.read_text())
    change(saved)
    path.write_text(json.dumps(saved))


def test_a_finished_run_records_the_digests_of_its_outputs(tmp_path, configs):
    results = tmp_path / "results"
    grid(configs, results)
    info = json.loads((run_dir(results, "fe", 1) / "tune_run.json").read_text())
    outputs = info[OUTPUTS_KEY]
    assert sorted(outputs) == ["dev_predictions.jsonl", "metrics.json", "model.tar.gz"]
    assert outputs["model.tar.gz"]["bytes"] == 512 and "mtime_ns" in outputs["model.tar.gz"]
    assert len(outputs["metrics.json"]["sha256"]) == 64
    assert info["score_check"] == "ok"  # checked as it finished; a rerun trusts it (digests hold)
    built, text = report(results)
    assert all(run.status == "ok" and run.digested for run in built.runs)
    assert "| SICK-E | accuracy | 50.0 ± 2.5 (n=3) | 75.0 ± 5.0 (n=3) |" in text
    assert "damaged" not in text.lower()


@pytest.mark.parametrize("digests", [True, False], ids=["digests", "before-digests"])
def test_a_forged_metrics_json_is_damaged_and_a_rerun_trains_it_again(
    tmp_path, configs, capsys, digests
):
    results = tmp_path / "results"
    grid(configs, results)
    if not digests:
        forget_digests(results)
    forged = run_dir(results, "fe", 2)
    # A plausible forgery, of the same size: 0.525 -> 0.575, two examples' worth at n = 40.
    edit_json(forged / "metrics.json", lambda m: m.update(best_validation_accuracy=0.575))

    built, text = report(results)
    run = next(run for run in built.runs if run.path == forged.resolve())
    assert run.status == "damaged" and run.value is None
    expected = (
        "metrics.json: sha256 differs from tune_run.json's record"
        if digests
        else "metrics.json: best_validation_accuracy 0.575 but dev_predictions.jsonl gives 0.525"
    )
    assert run.detail.startswith(expected)
    assert "| SICK-E | accuracy | 48.8 ± 1.8 (n=2), damaged (1/3) |" in text
    assert f"damaged: {forged.resolve()}: {expected}" in text
    assert "Damaged: 1 run(s) whose files are not what they left" in text

    capsys.readouterr()
    training, result = grid(configs, results)
    assert training.calls == [("fe", 2)]
    assert result.damaged == [forged]
    [aside] = result.moved_aside
    assert aside.name.startswith("seed_2.damaged-")
    # Nothing is deleted: the forged file is kept beside the run trained again.
    assert json.loads((aside / "metrics.json").read_text())["best_validation_accuracy"] == 0.575
    said = capsys.readouterr()
    assert f"{forged} is damaged ({expected}" in said.out + said.err
    built, text = report(results)
    assert built.superseded == 1 and all(run.status == "ok" for run in built.runs)
    assert "| SICK-E | accuracy | 50.0 ± 2.5 (n=3) |" in text


@pytest.mark.parametrize("digests", [True, False], ids=["digests", "before-digests"])
def test_a_truncated_metrics_json_is_never_complete(tmp_path, configs, capsys, digests):
    results = tmp_path / "results"
    grid(configs, results)
    if not digests:
        forget_digests(results)
    cut = run_dir(results, "ft", 2)
    text_before = (cut / "metrics.json").read_text()
    (cut / "metrics.json").write_text(text_before[: len(text_before) // 2])

    built, text = report(results)
    run = next(run for run in built.runs if run.path == cut.resolve())
    assert run.status == "damaged"
    assert run.detail.startswith("metrics.json: not valid JSON (")
    if digests:
        assert "metrics.json: " in run.detail and "bytes, tune_run.json's record says" in run.detail

    training, result = grid(configs, results)
    assert training.calls == [("ft", 2)] and result.damaged == [cut]
    assert all(run.status == "ok" for run in report(results)[0].runs)


@pytest.mark.parametrize("digests", [True, False], ids=["digests", "before-digests"])
def test_forged_predictions_give_no_verdict(tmp_path, configs, digests):
    results = tmp_path / "results"
    grid(configs, results)
    if not digests:
        forget_digests(results)
    # fe's predictions rewritten a little better: 2 more examples right in each seed.
    for seed in (1, 2, 3):
        better = predictions_of("fe", seed)
        for i in range(RIGHT["fe"][seed], RIGHT["fe"][seed] + 2):
            better[i] = GOLD[i]
        write_predictions(run_dir(results, "fe", seed), better)

    built, text = report(results)
    fe_runs = [run for run in built.runs if run.name.mode == "fe"]
    assert all(run.status == "damaged" for run in fe_runs)
    expected = (
        "dev_predictions.jsonl: sha256 differs"
        if digests
        else "metrics.json: best_validation_accuracy 0.5 but dev_predictions.jsonl gives 0.55"
    )
    assert expected in fe_runs[0].detail
    [row] = built.encoder_rows["bow"]
    assert row.paired == [] and row.verdict is None
    assert "use ft" not in " ".join(render_json(built)["answer"])

    training, result = grid(configs, results)
    assert sorted(training.calls) == [("fe", 1), ("fe", 2), ("fe", 3)]
    [row] = report(results)[0].encoder_rows["bow"]
    assert row.verdict is not None and row.verdict.verdict == "ft"


def test_a_prediction_file_written_after_the_run_finished_is_damage(tmp_path, configs):
    """A run whose prediction failed gets a dev_predictions.jsonl later: not its own."""
    results = tmp_path / "results"
    grid(configs, results)
    folder = run_dir(results, "ft", 1)
    edit_json(folder / "tune_run.json", lambda info: info[OUTPUTS_KEY].pop("dev_predictions.jsonl"))
    run = load_run(folder)
    assert run.status == "damaged"
    assert run.detail == (
        "dev_predictions.jsonl: not in tune_run.json's record (written after the run finished)"
    )


def test_an_archive_deleted_to_free_disk_is_no_damage_a_swapped_one_is(tmp_path, configs):
    results = tmp_path / "results"
    grid(configs, results)
    (run_dir(results, "fe", 1) / "model.tar.gz").unlink()
    assert load_run(run_dir(results, "fe", 1)).status == "ok"
    swapped = run_dir(results, "fe", 2) / "model.tar.gz"
    swapped.write_bytes(b"other weights")
    run = load_run(run_dir(results, "fe", 2))
    assert run.status == "damaged"
    assert run.detail.startswith("model.tar.gz: 13 bytes, tune_run.json's record says 512")
    # Same size, rewritten in place (another mtime): the sha256 is read and differs.
    rewritten = run_dir(results, "fe", 3) / "model.tar.gz"
    rewritten.write_bytes(b"WEIGHTS " * 64)
    detail = load_run(run_dir(results, "fe", 3)).detail
    assert (
        detail
        == "model.tar.gz: sha256 differs from tune_run.json's record (changed since it finished)"
    )


def rounds(configs, results, training=None):
    """`tune-compare --sequential` over the grid: looks after 2 and 3 seeds per mode."""
    training = training or Training()

    def train(modes, seeds):
        return grid({mode: configs[mode] for mode in modes}, results, seeds, training)[1]

    plan = SequentialPlan(looks=(2, 3))
    return training, run_rounds(configs, [1, 2, 3], results, train, plan, tool="tune-compare")


def _look_of(saved):
    """A stored look as a `Look` (the nulls JSON wrote for infinities back)."""
    values = {**saved, "scores_a": tuple(saved["scores_a"]), "scores_b": tuple(saved["scores_b"])}
    for key in ("bound", "high", "df"):
        values[key] = math.inf if values[key] is None else values[key]
    values["low"] = -math.inf if values["low"] is None else values["low"]
    return Look(**values)


def sequential_line(text):
    return [line for line in text.splitlines() if line.startswith("- bow SICK-E ft − fe:")]


def test_an_edited_sequential_json_is_named_and_shows_no_verdict(tmp_path, configs):
    results = tmp_path / "results"
    rounds(configs, results)
    saved_path = results / "sequential.json"
    built, text = report(results)
    assert len(built.sequential) == 1
    [line] = sequential_line(text)
    assert line.startswith("- bow SICK-E ft − fe: ft better: +21.2 [+4.8, +37.7] (98.4% interval")

    # The verdict's text edited, as the report prints it.
    def edit_text(saved):
        saved["pairs"][0]["text"] = "ft better: +15.0 [+10.0, +20.0] (99.5% interval, 2 seeds each)"

    edit_json(saved_path, edit_text)
    built, text = report(results)
    assert built.sequential == [] and "+15.0" not in text and sequential_line(text) == []
    [broken] = built.broken
    assert broken.problems == [
        "pairs[0].text is not what its last look says ('ft better: +21.2 [+4.8, +37.7] (98.4% "
        "interval, 2 seeds each)')"
    ]
    assert f"{saved_path}: broken, not shown (pairs[0].text is not" in text

    # Rebuilt by the rerun, which trains nothing.
    training, _ = rounds(configs, results)
    assert training.calls == []
    built, text = report(results)
    assert built.broken == [] and sequential_line(text)[0] == line


def test_a_sequential_json_whose_interval_was_moved_is_recomputed_from_its_runs(tmp_path, configs):
    """The stored look, its text and verdict all agree; only the runs say it is not theirs."""
    results = tmp_path / "results"
    rounds(configs, results)

    def move(saved):
        pair = saved["pairs"][0]
        look = pair["looks"][-1]
        look["low"] = round(look["low"] + 1.0, 1)  # a narrower interval
        pair["text"] = _look_of(look).text()

    edit_json(results / "sequential.json", move)
    built, text = report(results)
    assert sequential_line(text) == []
    [broken] = built.broken
    assert len(broken.problems) == 1
    assert broken.problems == [
        "pairs[0] ft - fe: look 1: stored ft better: +21.2 [+5.8, +37.7] (98.4% interval, 2 seeds "
        "each), the runs give ft better: +21.2 [+4.8, +37.7] (98.4% interval, 2 seeds each)"
    ]


def test_a_sequential_json_whose_scores_are_not_its_runs_is_broken(tmp_path, configs):
    results = tmp_path / "results"
    rounds(configs, results)

    def scores(saved):
        """ft's seeds 5 points better, the difference and the text with them: consistent."""
        pair = saved["pairs"][0]
        look = pair["looks"][-1]
        look["scores_a"] = [score + 5.0 for score in look["scores_a"]]
        for key in ("difference", "low", "high"):
            look[key] += 5.0
        pair["text"] = _look_of(look).text()

    edit_json(results / "sequential.json", scores)
    built, text = report(results)
    assert sequential_line(text) == []
    [broken] = built.broken
    assert broken.problems[0] == "pairs[0] ft - fe: ft seed 1: stored score 75 but the run's is 70"


@pytest.mark.parametrize(
    "cut, expected",
    [
        (lambda text: text[: len(text) // 3], "not valid JSON ("),
        (lambda text: json.dumps({**json.loads(text), "plan": 3}), "plan is a number (3), "),
        (lambda text: json.dumps({**json.loads(text), "pairs": 3}), "pairs is a number (3), "),
        (lambda text: "[]", "holds a list ([]), expected a JSON object"),
    ],
    ids=["truncated", "plan-a-number", "pairs-a-number", "a-list"],
)
def test_a_truncated_or_reshaped_sequential_json_is_named_never_a_crash(
    tmp_path, configs, cut, expected
):
    results = tmp_path / "results"
    rounds(configs, results)
    saved_path = results / "sequential.json"
    saved_path.write_text(cut(saved_path.read_text()))
    built, text = report(results)
    assert f"{saved_path}: broken, not shown ({expected}" in text
    [broken] = built.broken
    assert broken.path == saved_path and broken.problems[0].startswith(expected)
    assert "broken summary file(s) left out" in text
    assert render_json(built)["broken_files"][0]["path"] == str(saved_path)
    rounds(configs, results)
    assert report(results)[0].broken == []


def make_budget(results, configs):
    """A `tune-compare --budget 2` folder: each mode's best trial is a copy of its seed 1."""
    import shutil

    from allennlp_tune.experiments.budget import ModeSearch, budget_record

    grid(configs, results)
    searches = []
    for mode in ("fe", "ft"):
        trial = results / "search" / f"sick_e_bow_{mode}" / "trial_1"
        shutil.copytree(run_dir(results, mode, 1), trial)
        edit_json(trial / "tune_run.json", lambda info: info["ext_vars"].update(TUNE_LR="0.001"))
        searches.append(
            ModeSearch(
                mode=mode,
                study=f"sick_e_bow_{mode}",
                config=str(configs[mode]),
                space=["TUNE_LR=1e-4:1e-2:log"],
                start=None,
                trials={"complete": 1, "pruned": 1, "failed": 0},
                trained_now=2,
                best_trial=1,
                best_value=RIGHT[mode][1] / EXAMPLES,
                metric="accuracy",
                setting={"TUNE_LR": "0.001"},
                seconds=12.5,
            )
        )
    record = budget_record("sick_e", "bow", 2, searches)
    (results / "budget.json").write_text(json.dumps(record))
    return results / "budget.json"


def test_a_budget_json_is_held_to_its_best_trials(tmp_path, configs):
    results = tmp_path / "results"
    saved_path = make_budget(results, configs)
    built, text = report(results)
    assert len(built.budgets) == 1
    assert "| bow SICK-E fe | 2 (1 / 1 / 0) | 50.0 (trial 1) | TUNE_LR=0.001 |" in text

    edit_json(saved_path, lambda saved: saved["modes"][0].update(best_value=0.55))
    built, text = report(results)
    assert built.budgets == [] and "Equal budgets: the search behind" not in text
    [broken] = built.broken
    assert broken.problems == [
        "modes[0] fe: best trial 1: best_value 0.55 but the trial's score is 0.5"
    ]

    def trials(saved):
        saved["modes"][1]["trials"] = {"complete": 1, "pruned": 0, "failed": 0}

    edit_json(saved_path, lambda saved: saved["modes"][0].update(best_value=0.5))
    edit_json(saved_path, trials)
    [broken] = report(results)[0].broken
    assert broken.problems == ["modes[1] ft: 1 finished trials, the budget is 2"]


@pytest.mark.parametrize(
    "cut, expected",
    [
        (lambda text: text[: len(text) // 2], "not valid JSON ("),
        (
            lambda text: json.dumps({**json.loads(text), "modes": {"fe": 5}}),
            'modes is an object ({"fe": 5}), expected a list of objects',
        ),
        (
            lambda text: json.dumps(
                {
                    **json.loads(text),
                    "modes": [{**json.loads(text)["modes"][0], "trials": 5}],
                }
            ),
            "modes[0].trials is a number (5), expected an object of integers",
        ),
    ],
    ids=["truncated", "a-mode-reshaped", "trials-a-number"],
)
def test_a_truncated_or_reshaped_budget_json_is_named_never_a_crash(
    tmp_path, configs, cut, expected
):
    results = tmp_path / "results"
    saved_path = make_budget(results, configs)
    saved_path.write_text(cut(saved_path.read_text()))
    built, text = report(results)  # abacd86: AttributeError: 'int' object has no attribute 'get'
    assert "Equal budgets: the search behind" not in text
    assert f"{saved_path}: broken, not shown ({expected}" in text
    [broken] = built.broken
    assert broken.problems[0].startswith(expected)
    # Its trials are still kept out of the folder's runs.
    assert len(built.runs) == 6


def test_a_run_whose_own_predictions_do_not_give_its_score_says_so_as_it_finishes(
    tmp_path, configs, capsys
):
    class Off(Training):
        def __call__(self, command, environment, log_path):
            code = super().__call__(command, environment, log_path)
            run_dir = Path(command[command.index("-s") + 1])
            edit_json(run_dir / "metrics.json", lambda m: m.update(best_validation_accuracy=0.9))
            return code

    grid({"fe": configs["fe"]}, tmp_path / "results", seeds=(1,), training=Off())
    said = capsys.readouterr()
    assert (
        "sick_e_bow_fe seed 1: finished, but damaged at once: metrics.json: "
        "best_validation_accuracy 0.9 but dev_predictions.jsonl gives 0.5"
    ) in said.out + said.err
    assert "score_check" not in json.loads(
        (run_dir(tmp_path / "results", "fe", 1) / "tune_run.json").read_text()
    )
