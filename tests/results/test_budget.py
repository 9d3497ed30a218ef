"""
`tune-compare --budget K`: every mode gets exactly K search trials over its own space (its
config's recipe first), resumably, then the seeds of its best setting, and the report shows the
searches and says "equal budgets".

The searches train the tiny fixture BERT in this process (as tune-search does); the seeds train
in this process too (`in_process_training`, the grid's runner seam), so the file trains a dozen
one- or two-epoch runs of 16 sentences.
"""

import json
import logging
import math
import os
import re
import signal
import sys
from pathlib import Path

import optuna
import pytest
from allennlp.common.checks import ConfigurationError

import allennlp_tune  # noqa: F401  (registers the subcommands, sets the ext var defaults)
from allennlp_tune.experiments.budget import (
    SPACES,
    budget_pruner,
    default_setting,
    mode_space,
    parse_spaces,
)
from allennlp_tune.experiments.budget_run import run_budget
from allennlp_tune.experiments.compare import (
    load_task,
    resolve_encoder,
    run_compare,
    write_configs,
)
from allennlp_tune.experiments.outputs import predict_in_process
from allennlp_tune.reporting.render import render_json, render_markdown
from allennlp_tune.reporting.report import report_from_dirs

sys.path.insert(0, str(Path(__file__).parent))
from test_compare import BERT, allennlp, write_reviews  # noqa: E402

# Rate and 1-2 epochs: the fixture trains in a second or two per trial.
SHORT = "TUNE_LR=1e-5:2e-4:log TUNE_EPOCHS=1:2"


def in_process_training(command, environment, log_path):
    """`allennlp train` of the grid's command, in this process with the run's environment."""
    from allennlp.commands.train import train_model_from_file

    config = command[command.index("train") + 1]
    run_dir = command[command.index("-s") + 1]
    saved = dict(os.environ)
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    os.environ.update(environment)
    try:
        train_model_from_file(config, run_dir, file_friendly_logging=True)
    except Exception as error:
        log_path.write_text(f"{type(error).__name__}: {error}\n")
        return 1
    finally:
        os.environ.clear()
        os.environ.update(saved)
        root.handlers[:] = handlers
        root.setLevel(level)
    log_path.write_text("trained in process\n")
    return 0


def study_trials(results: Path, study: str):
    storage = f"sqlite:///{results / 'search' / 'optuna.db'}"
    return optuna.load_study(study_name=study, storage=storage).get_trials(deepcopy=False)


def written_configs(folder: Path, modes):
    """tune-compare's configs of the reviews task, written into `folder`/configs."""
    task = load_task(str(write_reviews(folder / "task")))
    return write_configs(task, resolve_encoder(str(BERT)), modes, folder, {})


def test_a_budget_search_prunes_from_the_first_finished_trial():
    """
    With K = 3 a drawn trial behind the config's own recipe (trial 0) at the same epoch stops
    from its 2nd epoch; one ahead of it goes on. tune-search's default pruner, which waits for
    3 finished trials, lets the same trial train to the end: no saving at the budgets users run.
    """

    def behind_at(pruner, values):
        study = optuna.create_study(direction="maximize", pruner=pruner)
        recipe = study.ask()
        for epoch, value in enumerate([0.60, 0.70, 0.75]):
            recipe.report(value, step=epoch)
        study.tell(recipe, 0.75)
        drawn = study.ask()
        decisions = []
        for epoch, value in enumerate(values):
            drawn.report(value, step=epoch)
            decisions.append(drawn.should_prune())
        return decisions

    assert behind_at(budget_pruner(), [0.50, 0.66]) == [False, True]  # epoch 1 is a warm-up
    assert behind_at(budget_pruner(), [0.50, 0.71, 0.74]) == [False, False, True]
    assert behind_at(budget_pruner(), [0.62, 0.72, 0.76]) == [False, False, False]
    waits = optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=1)
    assert behind_at(waits, [0.50, 0.66, 0.70]) == [False, False, False]


def test_successive_halving_keeps_only_the_best_third_at_each_rung():
    """
    `--pruner halving`: at epochs 2, 4 and 10 (steps 1, 3, 9) a trial goes on only in the best
    third of the trials that reached that rung; the first to reach a rung goes on, and a trial
    is never judged between rungs (a dip at epoch 3 stops nothing).
    """
    study = optuna.create_study(direction="maximize", pruner=budget_pruner("halving"))

    def run(curve):
        trial = study.ask()
        for epoch, value in enumerate(curve):
            trial.report(value, step=epoch)
            if trial.should_prune():
                study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                return epoch + 1  # the epochs it trained
        study.tell(trial, curve[-1])
        return len(curve)

    assert run([0.60, 0.70, 0.72, 0.75, 0.76]) == 5  # first at every rung
    assert run([0.62, 0.69, 0.80, 0.81, 0.82]) == 2  # behind the first at epoch 2
    assert run([0.65, 0.71, 0.50, 0.74, 0.90]) == 4  # best at epoch 2; behind at epoch 4
    assert run([0.64, 0.73, 0.40, 0.78, 0.79]) == 5  # best at epochs 2 and 4, dip unjudged
    # Three trials had reached epoch 2: only the best of them (and better) goes on from there.
    assert run([0.60, 0.72, 0.80, 0.90, 0.91]) == 2
    assert run([0.60, 0.74, 0.80, 0.90, 0.91]) == 5
    with pytest.raises(ConfigurationError, match="--pruner 'hyper': expected one of median"):
        budget_pruner("hyper")


def test_budget_options_are_checked_before_anything_trains(tmp_path, monkeypatch, capsys):
    task = write_reviews(tmp_path / "task")
    argv = ["tune-compare", str(task), "--encoder", str(BERT), "--results-dir", str(tmp_path)]
    for extra, message in [
        (["--budget", "0"], "--budget: expected a whole number of at least 1"),
        (["--budget", "2", "--ext-var", "TUNE_LR=1e-4"], "--budget searches TUNE_LR for fe"),
        (["--space", "ft=TUNE_LR=1e-5:1e-4:log"], "--space sets the search space of --budget"),
        (["--budget", "2", "--space", "ft=TUNE_LR=1e-4"], "--space ft: --param 'TUNE_LR=1e-4'"),
        (["--budget-unit", "compute"], "--budget-unit says what --budget K counts"),
        (["--pruner", "halving"], "--pruner stops --budget's search trials; give --budget K."),
        (["--budget-unit", "flops"], "invalid choice: 'flops' (choose from 'trials', 'compute')"),
        (
            ["--budget", "2", "--budget-unit", "compute", "--coordinator", str(tmp_path / "c.db")],
            "--budget-unit compute with --coordinator: the workers' searches are counted in",
        ),
    ]:
        assert allennlp(monkeypatch, *argv, *extra) == 2, extra
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err, err
    for texts, message in [
        (["lora=TUNE_LR=1e-5:1e-4:log"], "lora is not among"),
        (["ft"], "expected MODE="),
        (["ft=" + SHORT, "ft=" + SHORT], "--space ft is given twice"),
    ]:
        with pytest.raises(ConfigurationError, match=message):
            parse_spaces(texts, ["fe", "ft"])
    assert not (tmp_path / "search").exists()
    with pytest.raises(ConfigurationError, match="--budget 0: give the number of search trials"):
        run_compare(str(task), str(BERT), ["ft"], [1], tmp_path / "out", budget=0)
    assert parse_spaces(["ft=" + SHORT], ["ft"]) == {"ft": tuple(SHORT.split())}
    # The block modes search ft's space.
    assert [p.name for p in mode_space("top1", "bert")] == ["TUNE_LR", "TUNE_EPOCHS"]
    assert mode_space("top1", "bert") == mode_space("ft", "bert")


@pytest.mark.parametrize(
    "space, message",
    [
        # A variable no config reads, and one only another mode's config reads.
        (
            "TUNE_LR=1e-5:1e-4:log TUNE_EPOHCS=1:2",
            "--space ft TUNE_EPOHCS: {config} does not change when TUNE_EPOHCS does; does it "
            'read std.extVar("TUNE_EPOHCS")? Did you mean TUNE_EPOCHS?',
        ),
        (
            "TUNE_LR=1e-5:1e-4:log TUNE_FROZEN_EPOCHS=1:2",
            "--space ft TUNE_FROZEN_EPOCHS: {config} does not change when TUNE_FROZEN_EPOCHS",
        ),
        # Integer variables: a range the config's own checks refuse at its end, or inside it.
        (
            "TUNE_LR=1e-5:1e-4:log TUNE_EPOCHS=0:2",
            "--space ft TUNE_EPOCHS=0:2: the search can draw TUNE_EPOCHS=0, which {config} "
            "refuses: RUNTIME ERROR: TUNE_EPOCHS is '0'; expected an integer >= 1",
        ),
        (
            "TUNE_LR=1e-5:1e-4:log TUNE_EPOCHS=1.5:2.5",
            "--space ft TUNE_EPOCHS=1.5:2.5: the search can draw TUNE_EPOCHS=1.5, which {config} "
            "refuses: RUNTIME ERROR: TUNE_EPOCHS is '1.5'; expected an integer >= 1",
        ),
        (
            "TUNE_LR=1e-5:1e-4:log TUNE_EPOCHS=1.0:3.0",
            "--space ft TUNE_EPOCHS=1.0:3.0: the search can draw TUNE_EPOCHS=1.74, which ",
        ),
        (
            "TUNE_EPOCHS=1:2 TUNE_EPOCHS=2:3",
            "--space ft: TUNE_EPOCHS is given twice (TUNE_EPOCHS=1:2 and TUNE_EPOCHS=2:3)",
        ),
    ],
)
def test_plan_only_refuses_a_space_the_trials_would(tmp_path, monkeypatch, capsys, space, message):
    """`--budget --plan-only` checks every mode's space as its search does when its trials start
    (`search.check_config`), so a space it passes is one the trials take: on abacd86 each of
    these planned (exit 0), and the trials then failed or were refused."""
    task = write_reviews(tmp_path / "task")
    results = tmp_path / "out"
    argv = ["tune-compare", str(task), "--encoder", str(BERT), "--results-dir", str(results)]
    argv += ["--modes", "ft", "--budget", "2", "--space", f"ft={space}", "--plan-only"]
    assert allennlp(monkeypatch, *argv, "--no-calibrate", "--no-progress") == 2
    err = capsys.readouterr().err
    config = results / "configs" / "reviews_bertuncased_ft.jsonnet"
    line = err.strip().splitlines()[-1]
    assert line.startswith("allennlp tune-compare: " + message.format(config=config)), line
    assert "Traceback" not in err and not (results / "search").exists()


def test_each_modes_start_is_its_configs_own_recipe(tmp_path):
    """Read off the rendered config: ft 2e-5 x 3, bitfit 3e-3 x 5, fe 1e-3 with its network's
    dropout and patience 3; a default outside the space is not enqueued, and says why."""
    written_configs(tmp_path, ["fe", "ft", "bitfit"])
    configs = tmp_path / "configs"
    ext_vars = {"TUNE_BERT_MODEL": str(BERT)}
    expected = {
        "ft": {"TUNE_LR": 2e-5, "TUNE_EPOCHS": 3},
        "bitfit": {"TUNE_LR": 3e-3, "TUNE_EPOCHS": 5},
        # A classification task's fe network is the BCN, with its dropout of 0.5.
        "fe": {"TUNE_LR": 1e-3, "TUNE_DROPOUT": 0.5, "TUNE_PATIENCE": 3},
    }
    for mode, start in expected.items():
        config = configs / f"reviews_bertuncased_{mode}.jsonnet"
        setting, notes = default_setting(config, mode_space(mode, "bert"), ext_vars)
        assert setting == start and not notes, (mode, setting, notes)
    short = mode_space("ft", "bert", {"ft": tuple(SHORT.split())})
    setting, notes = default_setting(configs / "reviews_bertuncased_ft.jsonnet", short, ext_vars)
    assert setting is None and "TUNE_EPOCHS=3 is outside" in notes[0]
    assert SPACES["ft"] == ("TUNE_LR=1e-5:2e-4:log", "TUNE_EPOCHS=2:6")


def test_an_interrupted_search_runs_only_the_missing_trials(tmp_path, capsys):
    """Budget 1, then 2: one more trial; 2 again: none; 1 after 2: refused. The first trial is
    the config's own recipe (2e-5 x 3, inside this space)."""
    [config] = written_configs(tmp_path, ["ft"])
    space = {"ft": ("TUNE_LR=1e-5:2e-4:log", "TUNE_EPOCHS=1:3")}
    ext_vars = {"TUNE_BERT_MODEL": str(BERT)}

    def search(budget):
        return run_budget(
            {"ft": config},
            budget,
            tmp_path,
            "reviews",
            "bertuncased",
            "bert",
            ext_vars,
            spaces=space,
        )["ft"]

    first = search(1)
    assert first.trained_now == 1 and first.trials == {"complete": 1, "pruned": 0, "failed": 0}
    [trial] = study_trials(tmp_path, "reviews_bertuncased_ft")
    assert trial.params == {"TUNE_LR": 2e-5, "TUNE_EPOCHS": 3} == first.start
    second = search(2)
    assert second.trained_now == 1 and sum(second.trials.values()) == 2
    assert len(study_trials(tmp_path, "reviews_bertuncased_ft")) == 2
    again = search(2)
    assert again.trained_now == 0 and again.setting == second.setting
    assert "2 trials over TUNE_LR=1e-5:2e-4:log TUNE_EPOCHS=1:3 (2 finished before)" in (
        capsys.readouterr().err
    )
    with pytest.raises(ConfigurationError, match="has 2 finished trials already, more than"):
        search(1)
    with pytest.raises(ConfigurationError, match="searched TUNE_LR=1e-5:2e-4:log TUNE_EPOCHS=1:3"):
        run_budget(
            {"ft": config},
            2,
            tmp_path,
            "reviews",
            "bertuncased",
            "bert",
            ext_vars,
            spaces={"ft": tuple(SHORT.split())},
        )
    # The search's costs: every finished trial's epochs and encoder passes (16 sentences).
    assert again.seconds > 0 and again.passes is not None and again.passes[0] >= 4 * 16


def test_sigterm_ends_the_search_and_the_trial_it_stopped_runs_again(tmp_path, capsys):
    """
    `kill <tune-compare --budget>` (SIGTERM, which AllenNLP's own handler turns into an
    `Exception`) ends the search like Ctrl-C, in the middle of a trial's training: no further
    trial starts, the stopped trial does not count against K and keeps no weights, and the
    rerun trains that trial's setting again before new draws. (A real search once took the
    signal as one failed trial, counted it, and went on to the next.)
    """
    from allennlp.common.util import install_sigterm_handler
    from allennlp.training.gradient_descent_trainer import GradientDescentTrainer

    [config] = written_configs(tmp_path, ["ft"])
    space = {"ft": ("TUNE_LR=1e-5:2e-4:log", "TUNE_EPOCHS=1:2")}
    name = "reviews_bertuncased_ft"

    def search():
        return run_budget({"ft": config}, 3, tmp_path, "reviews", "bertuncased", "bert",
                          {"TUNE_BERT_MODEL": str(BERT)}, spaces=space)["ft"]  # fmt: skip

    trained = GradientDescentTrainer._train_epoch
    starts = []

    def signalled_in_the_second_trial(self, epoch):
        starts.append(epoch)
        if starts.count(0) == 2 and epoch == 0:
            os.kill(os.getpid(), signal.SIGTERM)  # raised in this thread, inside the training
        return trained(self, epoch)

    previous = signal.getsignal(signal.SIGTERM)
    install_sigterm_handler()  # as `allennlp` does before every command
    allennlp_handler = signal.getsignal(signal.SIGTERM)
    GradientDescentTrainer._train_epoch = signalled_in_the_second_trial
    try:
        with pytest.raises(KeyboardInterrupt):
            search()
        assert signal.getsignal(signal.SIGTERM) is allennlp_handler
    finally:
        GradientDescentTrainer._train_epoch = trained
        signal.signal(signal.SIGTERM, previous)
    first, stopped = study_trials(tmp_path, name)  # no third trial started
    assert first.state != optuna.trial.TrialState.FAIL
    assert stopped.state == optuna.trial.TrialState.FAIL and stopped.user_attrs["interrupted"]
    stopped_dir = tmp_path / "search" / name / "trial_1"
    assert not (stopped_dir / "tune_run.json").exists() and not list(stopped_dir.glob("*.th"))
    capsys.readouterr()

    resumed = search()
    assert resumed.trained_now == 2
    assert resumed.trials["failed"] == 0 and sum(resumed.trials.values()) == 3
    trials = study_trials(tmp_path, name)
    assert len(trials) == 4 and trials[2].params == stopped.params
    assert "1 trial(s) were stopped (interrupted or killed) before" in capsys.readouterr().err


def test_each_trial_says_how_it_ended_and_what_the_rest_would_take(tmp_path, capsys):
    """After each trial, on the command's stderr (the trials' own output is in their logs): how
    it ended, its dev score, the trials finished of K, the best so far, and the time of the
    trials left at the mean training time of those so far (their cost.json)."""
    [config] = written_configs(tmp_path, ["ft"])
    space = {"ft": tuple(SHORT.split())}
    searched = run_budget({"ft": config}, 3, tmp_path, "reviews", "bertuncased", "bert",
                          {"TUNE_BERT_MODEL": str(BERT)}, spaces=space)  # fmt: skip
    lines = [line for line in capsys.readouterr().err.splitlines() if ": ft: trial " in line]
    trials = study_trials(tmp_path, "reviews_bertuncased_ft")
    assert len(lines) == 3 and searched["ft"].trials["complete"] == 3
    seconds = []
    for done, (line, trial) in enumerate(zip(lines, trials), start=1):
        cost = json.loads((Path(trial.user_attrs["run_dir"]) / "cost.json").read_text())
        seconds.append(sum(cost["epoch_seconds"]))
        best = max(trials[:done], key=lambda t: t.value)
        said = (
            f"tune-compare: ft: trial {trial.number} finished (dev accuracy {trial.value:.4f}); "
            f"{done} of 3 trials, best so far trial {best.number} ({best.value:.4f})"
        )
        if done < 3:
            mean = sum(seconds) / len(seconds)
            said += f"; the {3 - done} left: about {(3 - done) * mean:.0f} s at these trials' mean"
        assert line == said


def test_a_trial_a_killed_process_left_running_runs_again(tmp_path, capsys):
    """
    `kill -9` (or a crash) in the middle of a trial leaves it RUNNING in the study. The next
    one-process search (which holds the results folder's lock, so nobody else trains it) marks
    it interrupted, does not count it, and trains its setting again instead of a new draw.
    """
    [config] = written_configs(tmp_path, ["ft"])
    space = {"ft": ("TUNE_LR=1e-5:2e-4:log", "TUNE_EPOCHS=1:2")}
    name = "reviews_bertuncased_ft"

    def search(budget):
        return run_budget({"ft": config}, budget, tmp_path, "reviews", "bertuncased", "bert",
                          {"TUNE_BERT_MODEL": str(BERT)}, spaces=space)["ft"]  # fmt: skip

    search(1)
    # What a killed process leaves: a trial that has its values and a partial folder, RUNNING.
    storage = f"sqlite:///{tmp_path / 'search' / 'optuna.db'}"
    study = optuna.load_study(study_name=name, storage=storage)
    killed = study.ask()
    killed.suggest_float("TUNE_LR", 1e-5, 2e-4, log=True)
    killed.suggest_int("TUNE_EPOCHS", 1, 2)
    partial = tmp_path / "search" / name / f"trial_{killed.number}"
    partial.mkdir()
    (partial / "model_state_e0_b0.th").write_bytes(b"weights")
    killed.set_user_attr("run_dir", str(partial))
    capsys.readouterr()

    resumed = search(2)
    assert resumed.trained_now == 1 and resumed.trials == {"complete": 2, "pruned": 0, "failed": 0}
    first, dead, again = study_trials(tmp_path, name)
    assert dead.state == optuna.trial.TrialState.FAIL and dead.user_attrs["interrupted"]
    assert again.params == dead.params and again.state == optuna.trial.TrialState.COMPLETE
    assert not list(partial.glob("*.th"))
    assert "1 trial(s) were stopped (interrupted or killed) before" in capsys.readouterr().err


def test_equal_budgets_then_seeds_of_each_best_setting(tmp_path, capsys):
    """ft and bitfit, 2 trials each, one seed of each best: the trials train with that seed, so
    each best trial is kept as it (its config.json the seed's, not trained again), a rerun
    trains nothing, the report shows the searches and not the trials, and its answer says
    equal budgets."""
    task = write_reviews(tmp_path / "task")
    results = tmp_path / "out"
    spaces = {"ft": tuple(SHORT.split()), "bitfit": ("TUNE_LR=5e-5:5e-3:log", "TUNE_EPOCHS=1:2")}

    def compare():
        return run_compare(
            str(task),
            str(BERT),
            ["ft", "bitfit"],
            [1],
            results,
            budget=2,
            spaces=spaces,
            runner=in_process_training,
            predict=predict_in_process,
            progress=False,
            plan=False,
        )

    result = compare()
    # Both best trials trained to their end with seed 1: kept as seed 1, found complete.
    assert not result.trained and len(result.skipped) == 2 and not result.failed
    err = capsys.readouterr().err
    saved = json.loads((results / "budget.json").read_text())
    assert saved["budget"] == 2 and [m["mode"] for m in saved["modes"]] == ["ft", "bitfit"]
    for mode in saved["modes"]:
        trials = study_trials(results, f"reviews_bertuncased_{mode['mode']}")
        assert len(trials) == 2 and sum(mode["trials"].values()) == 2
        best = max(
            (t for t in trials if t.state == optuna.trial.TrialState.COMPLETE),
            key=lambda t: t.value,
        )
        assert mode["best_trial"] == best.number and mode["setting"] == best.user_attrs["ext_vars"]
        run = results / f"reviews_bertuncased_{mode['mode']}" / "seed_1"
        config = json.loads((run / "config.json").read_text())
        assert config["trainer"]["optimizer"]["lr"] == float(mode["setting"]["TUNE_LR"])
        assert config["trainer"]["num_epochs"] == int(mode["setting"]["TUNE_EPOCHS"])
        assert "optuna_pruning" not in json.dumps(config["trainer"])  # the seed's config
        info = json.loads((run / "tune_run.json").read_text())
        assert info["ext_vars"]["TUNE_LR"] == mode["setting"]["TUNE_LR"]
        trial = f"search/reviews_bertuncased_{mode['mode']}/trial_{best.number}"
        assert info["kept_from_trial"] == trial and info["seed"] == 1
        assert mode["kept_seed"] == 1 and f"trial {best.number} " in mode["kept_note"]
        assert f"{mode['mode']}: trial {best.number} (trained to its end with seed 1) " in err
        # The same run: its scores and predictions are the trial's.
        for name in ("metrics.json", "dev_predictions.jsonl"):
            assert (run / name).read_bytes() == (results / trial / name).read_bytes()

    again = compare()
    assert not again.trained and len(again.skipped) == 2
    for mode in ("ft", "bitfit"):
        assert len(study_trials(results, f"reviews_bertuncased_{mode}")) == 2

    report = report_from_dirs([results])
    assert len(report.runs) == 2  # the seeds; the trials in out/search are not runs of it
    markdown = render_markdown(report)
    assert "## Equal budgets: the search behind each mode's seeds (2 trials per mode)" in markdown
    searches = markdown.split("## Equal budgets: the search", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in searches.splitlines() if line.startswith("| bertuncased reviews ")]
    assert len(rows) == 2 and all("| 2 (" in row and "TUNE_LR=" in row for row in rows), rows
    assert "equal budgets (2 trials per mode" in markdown and "default recipes" not in markdown
    assert "trial seed 1, the seeds' first: 2 mode(s)' best trial, trained to its end" in markdown
    assert render_json(report)["budgets"][0]["budget"] == 2
    # No trial was pruned (the pruner waits for 3) and the seed cap is the one seed, which is
    # each mode's kept best trial: the decision spent its 2 trials per mode, against the full
    # protocol's 2 trials and 1 seed each, and says so.
    for mode in saved["modes"]:
        assert mode["full_passes"] == mode["passes"] and mode["passes"][0] > 0, mode
    assert "## What the decision spent, against the full protocol and the naive" in markdown
    [total] = [line for line in markdown.splitlines() if "reviews, all modes |" in line]
    assert "| 0 of 2 (+2 kept trial): 0 / " in total, total
    # The configs' recipes (3 epochs) lie outside the searched 1-2: the naive experiment is
    # estimated from the seeds (one per mode), 2 trials each against 1 run each.
    share = re.search(r"\| (\d+)% \| [0-9.]+k? \(est\.\) \| ([0-9.]+)x \|$", total)
    assert share and 50 <= int(share.group(1)) <= 80 and 1.0 < float(share.group(2)) < 3.0, total
    assert "The decision on bertuncased reviews cost " in markdown
    assert f"{share.group(1)}% of the full protocol's" in markdown
    assert "0 of 2 seed runs trained and 2 kept from the search" in markdown

    # A better trial added to ft's study (its budget then 3): its seed was trained with another
    # setting, and is refused as changed, naming the mode and what changed, not reused.
    storage = f"sqlite:///{results / 'search' / 'optuna.db'}"
    study = optuna.load_study(study_name="reviews_bertuncased_ft", storage=storage)
    better = {"TUNE_LR": "0.0001", "TUNE_EPOCHS": "1"}
    study.add_trial(
        optuna.trial.create_trial(
            params={"TUNE_LR": 1e-4, "TUNE_EPOCHS": 1},
            distributions={
                "TUNE_LR": optuna.distributions.FloatDistribution(1e-5, 2e-4, log=True),
                "TUNE_EPOCHS": optuna.distributions.IntDistribution(1, 2),
            },
            value=1.0,
            user_attrs={"ext_vars": better},
        )
    )
    with pytest.raises(ConfigurationError) as refused:
        run_compare(
            str(task), str(BERT), ["ft"], [1], results, budget=3, spaces=spaces,
            runner=in_process_training, predict=predict_in_process, progress=False, plan=False,
        )  # fmt: skip
    message = str(refused.value)
    assert message.startswith("the seeds, at each mode's best setting of its 3 search trials: ")
    assert "reviews_bertuncased_ft/seed_1: TUNE_EPOCHS " in message, message
    assert "-> 0.0001" in message and "--retrain-changed" in message


def test_a_kept_trial_whose_data_changed_is_refused_as_changed(tmp_path, capsys):
    """ft, 1 trial, kept as seed 1; then a training row changes: the next command refuses the
    kept seed as changed, naming the file (the trial's fingerprint is from when it trained),
    and trains nothing."""
    task = write_reviews(tmp_path / "task")
    results = tmp_path / "out"

    def compare():
        return run_compare(
            str(task), str(BERT), ["ft"], [1], results, budget=1,
            spaces={"ft": tuple(SHORT.split())}, runner=in_process_training,
            predict=predict_in_process, progress=False, plan=False,
        )  # fmt: skip

    first = compare()
    assert not first.trained and len(first.skipped) == 1
    seed = results / "reviews_bertuncased_ft" / "seed_1"
    assert json.loads((seed / "tune_run.json").read_text())["kept_from_trial"]
    train = tmp_path / "task" / "train.csv"
    train.write_text(train.read_text().replace(",neg\n", ",pos\n", 1))
    with pytest.raises(ConfigurationError) as refused:
        compare()
    message = str(refused.value)
    assert "reviews_bertuncased_ft/seed_1: " in message and "train.csv" in message, message
    assert "--retrain-changed" in message
    # Nothing else was kept or trained in its place.
    assert not (results / "reviews_bertuncased_ft" / "seed_1.tmp").exists()
    assert sorted(p.name for p in (results / "reviews_bertuncased_ft").iterdir()) == ["seed_1"]


def test_the_plan_before_the_search_covers_every_trial_and_seed(tmp_path, capsys):
    """--budget 3 with --plan-only: one cell per mode at its space's most epochs (ft's 6 of
    2..6; fe's space has no epochs, so its config's 10), 3 trials + 1 seed each in the total (seed
    1 is the best trial, kept), nothing trained; after one finished trial in ft's study, ft
    plans 2 trials."""
    task = write_reviews(tmp_path / "task")
    results = tmp_path / "out"

    def plan_only():
        result = run_compare(
            str(task), str(BERT), ["fe", "ft"], [1, 2], results, budget=3, plan_only=True,
            progress=False,
        )  # fmt: skip
        assert not result.trained and not result.skipped
        return capsys.readouterr().out

    printed = plan_only()
    assert (
        "plan of the whole decision (--budget 3): 6 search trial(s) and 2 seed run(s) over 2 "
        "mode(s) (seed 1 of each: its best trial, kept)"
    ) in printed
    rows = {
        mode: next(line for line in printed.splitlines() if line.startswith(f"| {stem} |"))
        for mode, stem in (("fe", "reviews_bertuncased_fe"), ("ft", "reviews_bertuncased_ft"))
    }
    assert rows["ft"].endswith("(6 epochs) |") and rows["fe"].endswith("(10 epochs) |"), rows
    assert "reviews_bertuncased_ft: 3 search trial(s) and 1 seed run(s) to do" in printed
    assert "Estimated total: " in printed and " for 8 run(s) " in printed
    assert not (results / "search").exists() and not (results / "reviews_bertuncased_ft").exists()

    (results / "search").mkdir()
    study = optuna.create_study(
        study_name="reviews_bertuncased_ft",
        storage=f"sqlite:///{results / 'search' / 'optuna.db'}",
        direction="maximize",
    )
    study.add_trial(
        optuna.trial.create_trial(
            params={"TUNE_EPOCHS": 2},
            distributions={"TUNE_EPOCHS": optuna.distributions.IntDistribution(2, 6)},
            value=0.5,
        )
    )
    printed = plan_only()
    assert "reviews_bertuncased_ft: 2 search trial(s) and 1 seed run(s) to do" in printed
    assert " for 7 run(s) " in printed


def test_a_sequential_plan_gives_the_total_if_the_first_look_decides(tmp_path, capsys):
    """--budget 3 --sequential with looks 2 and 3: the total counts 6 trials and 2 seeds per
    mode (10 runs: seed 1 is the best trial, kept); the line after it, 6 trials and the first
    look's one seed left to train per mode (8), for less time."""
    from allennlp_tune.reporting.sequential import SequentialPlan

    task = write_reviews(tmp_path / "task")
    results = tmp_path / "out"

    def plan_only():
        run_compare(
            str(task), str(BERT), ["fe", "ft"], [1, 2, 3], results, budget=3, plan_only=True,
            progress=False, sequential=SequentialPlan(looks=(2, 3)),
        )  # fmt: skip
        return capsys.readouterr().out

    def minutes(text):
        value, unit = text.split()
        return float(value) * {"s": 1 / 60, "min": 1, "h": 60}[unit]

    printed = plan_only()
    total = re.search(r"Estimated total: (.+?) at most for 10 run\(s\)", printed)
    first = re.search(
        r"If the first look \(2 seeds per mode\) decides: (.+?) at most for 8 run\(s\); ",
        printed,
    )
    assert total and first, printed
    assert 0 < minutes(first.group(1)) < minutes(total.group(1)), printed


def test_the_plan_before_the_search_refuses_a_cache_that_would_not_fit(tmp_path, capsys):
    """A feature cache over its disk budget stops `--budget` at its first plan, as the grid's
    own plan does, before any trial trains (the trials would recompute every epoch)."""
    task = write_reviews(tmp_path / "task")
    results = tmp_path / "out"
    cache = "model.text_field_embedder.token_embedders.tokens.feature_cache"
    with pytest.raises(ConfigurationError) as refused:
        run_compare(
            str(task), str(BERT), ["fe"], [1], results, budget=2, progress=False, plan=True,
            overrides=json.dumps({f"{cache}.disk_mb": 0.001}),
        )  # fmt: skip
    message = str(refused.value)
    assert message.startswith("nothing was trained: reviews_bertuncased_fe: "), message
    assert "plan of the whole decision (--budget 2)" in capsys.readouterr().err
    assert not (results / "search").exists()


def test_a_budget_in_compute_gives_the_light_frozen_arm_more_trials(tmp_path, capsys):
    """
    `--budget 2 --budget-unit compute`, fe (light heads on the cached pooled layers) against
    ft, one epoch each: each mode's trials spend what 2 ft trials spend in encoder forward
    passes (3 a fwd+bwd pass), the head's work added. ft's 2 trials spend exactly that; fe's
    first trial fills the pooled cache (a forward pass over the distinct sentences) and the
    later ones read it and pay only their head, so fe runs to its cap of 10 K trials, well
    under the budget. budget.json, the terminal and the report say so.
    """
    task = write_reviews(tmp_path / "task")
    results = tmp_path / "out"
    spaces = {
        "fe": ("TUNE_FE_HEAD=linear,mlp", "TUNE_LR=1e-3:1e-2:log"),
        "ft": ("TUNE_LR=1e-5:2e-4:log",),
    }
    result = run_compare(
        str(task), str(BERT), ["fe", "ft"], [1], results, budget=2, spaces=spaces,
        budget_unit="compute", ext_vars={"TUNE_EPOCHS": "1"}, runner=in_process_training,
        predict=predict_in_process, progress=False, plan=False,
    )  # fmt: skip
    assert len(result.trained) == 2 and not result.failed
    err = capsys.readouterr().err
    saved = json.loads((results / "budget.json").read_text())
    assert saved["unit"] == "compute"
    compute = saved["compute_budget"]
    # 16 training sentences, ft's one epoch forward and backward, 2 trials.
    assert compute["reference"] == "ft" and compute["instances"] == 16
    assert compute["total"] == 2 * 3 * 16 and compute["cap"] == 20
    by_mode = {mode["mode"]: mode for mode in saved["modes"]}
    counts = {mode: sum(by_mode[mode]["trials"].values()) for mode in by_mode}
    assert counts["ft"] == 2 and counts["fe"] == compute["cap"], counts
    # ft's recipe (2e-5, the config's) was its first trial: one epoch fwd+bwd over 16 sentences
    # is its part of the naive experiment; fe's paper network lies outside its space.
    assert by_mode["ft"]["start_passes"] == [16, 0] and by_mode["fe"]["start_passes"] is None
    for mode, searched in by_mode.items():
        trials = study_trials(results, f"reviews_bertuncased_{mode}")
        assert len(trials) == counts[mode]
        # ft: the budget is reached, and not before its last trial; fe: the cap, under it.
        costs = [trial_compute(trial) for trial in trials]
        assert math.isclose(sum(costs), searched["compute"]), (mode, costs)
        if mode == "ft":
            assert sum(costs) >= compute["total"] > sum(costs[:-1]), costs
        else:
            assert sum(costs) < compute["total"], costs
    fe_costs = [trial_compute(trial) for trial in study_trials(results, "reviews_bertuncased_fe")]
    # fe's first trial computed the cache's entries (16 sentences, some of them the same text);
    # the others read them, and their head costs a fraction of a pass over the data.
    assert 8 < fe_costs[0] <= 16.5 and all(cost < 8 for cost in fe_costs[1:]), fe_costs
    assert "fe: trials until they spend 96 encoder forward passes (--budget 2 in compute" in err
    assert f"fe: best of {counts['fe']} trials" in err
    # The answer so far, from the two best trials, marked as not yet a verdict.
    [so_far] = [line for line in err.splitlines() if ": so far " in line]
    assert re.match(
        r"tune-compare: so far \(each mode's best search trial, one run each\): ft − fe "
        r"[+-]\d+\.\d \[[+-]\d+\.\d, [+-]\d+\.\d\] (ft|fe|tie); not yet a verdict: ",
        so_far,
    ), so_far

    markdown = render_markdown(report_from_dirs([results]))
    assert "## Equal budgets: the search behind each mode's seeds (compute of 2 trials of ft " in (
        markdown
    )
    assert f"so each got fe {counts['fe']}, ft 2 trials" in markdown
    assert "equal compute budgets (each mode's trials spent what 2 trials of ft spend" in markdown
    # Each trial's score is kept, and the report's expected best of k trials starts at their
    # mean (k = 1) and shows k up to fe's trials.
    for mode, searched in by_mode.items():
        assert len(searched["trial_values"]) == counts[mode] and searched["higher_is_better"]
    expected = markdown.split("## Expected best dev score of k trials", 1)[1].split("\n## ")[0]
    [fe_row] = [
        line for line in expected.splitlines() if line.startswith("| bertuncased reviews fe")
    ]
    mean = 100 * sum(by_mode["fe"]["trial_values"]) / counts["fe"]
    assert fe_row.split(" | ")[1:3] == [str(counts["fe"]), f"{mean:.1f}"], fe_row
    assert f"| k={counts['fe']} |" in expected


def trial_compute(trial) -> float:
    from allennlp_tune.reporting.costs import compute_equivalents
    from allennlp_tune.rundir import load_run

    run = load_run(Path(trial.user_attrs["run_dir"]))
    wordpieces = json.loads((Path(trial.user_attrs["run_dir"]).parents[2] / "budget.json")
                            .read_text())["compute_budget"]["wordpieces_per_instance"]  # fmt: skip
    return compute_equivalents(run, wordpieces)


def test_a_search_keeps_the_pruner_it_was_started_with(tmp_path, capsys):
    """`--pruner halving` is recorded in budget.json and in the study; the same folder searched
    again with the median pruner is refused, naming both, as a changed space is."""
    [config] = written_configs(tmp_path, ["ft"])
    ext_vars = {"TUNE_BERT_MODEL": str(BERT)}

    def search(pruner):
        return run_budget(
            {"ft": config}, 2, tmp_path, "reviews", "bertuncased", "bert", ext_vars,
            spaces={"ft": tuple(SHORT.split())}, pruner=pruner,
        )  # fmt: skip

    search("halving")
    saved = json.loads((tmp_path / "budget.json").read_text())
    assert saved["pruner"].startswith("successive halving (per-epoch dev metric; a trial goes on")
    with pytest.raises(ConfigurationError, match="was searched with --pruner halving"):
        search("median")


def test_a_plan_in_compute_plans_each_mode_at_the_trials_its_share_buys(tmp_path, capsys):
    """Under --budget-unit compute the plan of the decision gives fe its cap (10 K: its trials
    after the first read the cache) and a trained mode K x the costliest's epochs / its own."""
    from allennlp_tune.experiments.budget_plan import mode_trials

    assert mode_trials({"fe": 10, "ft": 6}, 3) == {"fe": 3, "ft": 3}
    assert mode_trials({"fe": 10, "ft": 6, "lora": 3}, 3, "compute") == {
        "fe": 30,
        "ft": 3,
        "lora": 6,
    }
    task = write_reviews(tmp_path / "task")
    run_compare(
        str(task), str(BERT), ["fe", "ft"], [1], tmp_path / "out", budget=2,
        budget_unit="compute", plan_only=True, progress=False,
    )  # fmt: skip
    printed = capsys.readouterr().out
    assert "plan of the whole decision (--budget 2): 22 search trial(s) and 2 seed run(s)" in (
        printed
    ), printed
    assert "20 search trial(s) and 1 seed run(s) to do" in printed
    assert "--budget-unit compute: planned at 20 trials (its cap" in printed


def test_a_seed_folder_already_there_is_not_replaced_by_the_kept_trial(tmp_path, capsys):
    """A seed 1 folder a user (or a killed run) left: the best trial is not kept over it, the
    command says so, and the grid trains seed 1 as it would have (the folder moved aside, not
    deleted)."""
    task = write_reviews(tmp_path / "task")
    results = tmp_path / "out"
    left = results / "reviews_bertuncased_ft" / "seed_1"
    left.mkdir(parents=True)
    (left / "notes.txt").write_text("mine\n")
    result = run_compare(
        str(task), str(BERT), ["ft"], [1], results, budget=1,
        spaces={"ft": tuple(SHORT.split())}, runner=in_process_training,
        predict=predict_in_process, progress=False, plan=False,
    )  # fmt: skip
    assert result.trained == [left] and not result.skipped
    assert "ft: seed 1 exists already; trial 0 is not kept as it" in capsys.readouterr().err
    info = json.loads((left / "tune_run.json").read_text())
    assert "kept_from_trial" not in info and info["status"] == "ok"
    [aside] = [p for p in left.parent.iterdir() if p.name.startswith("seed_1.")]
    assert (aside / "notes.txt").read_text() == "mine\n"
    saved = json.loads((results / "budget.json").read_text())
    assert saved["modes"][0]["kept_seed"] is None
    # The report does not call seed 1 "not a reported seed": the trials trained with it.
    markdown = render_markdown(report_from_dirs([results]))
    assert "trial seed 1, the seeds' first; no best trial was kept as it" in markdown
