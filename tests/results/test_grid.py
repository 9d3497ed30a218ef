import argparse
import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from allennlp.common.checks import ConfigurationError

from allennlp_tune.commands.tune_grid import add_grid_parser
from allennlp_tune.commands.tune_report import add_report_parser
from allennlp_tune.data.paths import FIXTURE_DATA_DIR, FIXTURE_MODELS_DIR, REPO_ROOT
from allennlp_tune.experiments.configs import expand_configs, parse_ext_vars
from allennlp_tune.experiments.grid import run_grid
from allennlp_tune.experiments.process import train_subprocess
from allennlp_tune.planning.plan import render_config
from allennlp_tune.reporting.costs import encoder_passes
from allennlp_tune.reporting.render import render_markdown
from allennlp_tune.reporting.report import report_from_dirs
from allennlp_tune.rundir import load_run


def run_cli(add_parser, argv):
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(), "command")
    args = parser.parse_args(["command", *map(str, argv)])
    args.func(args)


class FakeTraining:
    """Stands in for `allennlp train`: records calls, can fail or be interrupted midway."""

    def __init__(self, fail=(), interrupt_at=None):
        self.calls, self.fail, self.interrupt_at = [], set(fail), interrupt_at
        self.caches = []

    def __call__(self, command, environment, log_path):
        run_dir = Path(command[command.index("-s") + 1])
        seed = int(environment["TUNE_SEED"])
        self.calls.append((run_dir.parent.name, seed))
        cache = Path(environment["TUNE_FEATURE_CACHE_DIR"])
        self.caches.append(cache)
        (cache / "ab").mkdir(parents=True, exist_ok=True)
        (cache / "ab" / f"{run_dir.parent.name}_{seed}.f16").write_bytes(b"f")
        log_path.write_text("training\n")
        run_dir.mkdir()
        # What `allennlp train` writes: the config rendered with the run's environment.
        config_path = Path(command[command.index("train") + 1])
        overrides = command[command.index("--overrides") + 1] if "--overrides" in command else None
        config = render_config(config_path, environment, overrides)
        (run_dir / "config.json").write_text(json.dumps(config))
        for name in ("best.th", f"model_state_e{seed}_b0.th", f"training_state_e{seed}_b0.th"):
            (run_dir / name).write_bytes(b"w" * 1024)
        (run_dir / "feature_cache" / "ab").mkdir(parents=True)
        (run_dir / "feature_cache" / "ab" / "abc.f16").write_bytes(b"f" * 1024)
        if len(self.calls) == self.interrupt_at:
            raise KeyboardInterrupt  # killed while this run was in progress
        if (run_dir.parent.name, seed) in self.fail:
            log_path.write_text("training\nRuntimeError: boom\n")
            return 1
        metrics = {"best_validation_accuracy": 0.5 + seed / 10}
        (run_dir / "metrics.json").write_text(json.dumps(metrics))
        (run_dir / "model.tar.gz").write_bytes(b"")
        return 0


@pytest.fixture
def configs(tmp_path):
    paths = [tmp_path / "configs" / f"sick_e_bow_{mode}.jsonnet" for mode in ("fe", "ft")]
    paths[0].parent.mkdir()
    for path in paths:
        path.write_text(GRID_CONFIG)
    return paths


# A config as the fake training reads it: its seed and metric (the rest is never trained).
GRID_CONFIG = """{
  random_seed: std.parseInt(std.extVar("TUNE_SEED")),
  trainer: {validation_metric: "+accuracy"},
}"""


def status(run_dir):
    return json.loads((run_dir / "tune_run.json").read_text())["status"]


def test_interrupted_grid_reruns_only_unfinished_runs(tmp_path, configs):
    results = tmp_path / "results"
    first = FakeTraining(interrupt_at=3)
    with pytest.raises(KeyboardInterrupt):
        run_grid(configs, [1, 2], results, ext_vars={"TUNE_EPOCHS": "1"}, runner=first)
    # Seed by seed: every config with seed 1, then seed 2.
    assert first.calls == [("sick_e_bow_fe", 1), ("sick_e_bow_ft", 1), ("sick_e_bow_fe", 2)]
    assert status(results / "sick_e_bow_fe" / "seed_1") == "ok"
    assert not (results / "sick_e_bow_fe" / "seed_2" / "tune_run.json").exists()

    second = FakeTraining()
    result = run_grid(configs, [1, 2], results, runner=second)
    assert second.calls == [("sick_e_bow_fe", 2), ("sick_e_bow_ft", 2)]
    assert len(result.skipped) == 2 and len(result.trained) == 2
    # The interrupted attempt is kept aside with its log, not deleted.
    [aside] = result.moved_aside
    assert aside.name.startswith("seed_2.incomplete-")
    assert (aside / "config.json").exists() and (aside / "tune_train.log").exists()
    info = json.loads((results / "sick_e_bow_fe" / "seed_2" / "tune_run.json").read_text())
    assert info["seed"] == 2 and info["ext_vars"] == {"TUNE_SEED": "2"}
    assert (info["task"], info["encoder"], info["mode"]) == ("sick_e", "bow", "fe")

    report = report_from_dirs([results])
    assert len(report.runs) == 4 and report.superseded == 1
    assert "| SICK-E | accuracy | 65.0 ± 7.1 (n=2) |" in render_markdown(report)

    third = FakeTraining()
    run_grid(configs, [1, 2], results, runner=third)
    assert third.calls == []


def test_a_finished_run_whose_archive_was_deleted_is_not_trained_again(tmp_path, configs, capsys):
    """Deleting model.tar.gz to free disk, then asking for more seeds, trains only the new ones."""
    results = tmp_path / "results"
    run_grid(configs[:1], [1], results, runner=FakeTraining())
    (results / "sick_e_bow_fe" / "seed_1" / "model.tar.gz").unlink()
    capsys.readouterr()
    more = FakeTraining()
    result = run_grid(configs[:1], [1, 2], results, runner=more)
    assert more.calls == [("sick_e_bow_fe", 2)]
    assert result.moved_aside == [] and len(result.skipped) == 1
    assert status(results / "sick_e_bow_fe" / "seed_1") == "ok"
    captured = capsys.readouterr()
    assert "seed_1 finished earlier but has no model.tar.gz" in captured.out + captured.err
    # A run stopped before it wrote tune_run.json is still trained again.
    (results / "sick_e_bow_fe" / "seed_2" / "tune_run.json").unlink()
    again = FakeTraining()
    result = run_grid(configs[:1], [1, 2], results, runner=again)
    assert again.calls == [("sick_e_bow_fe", 2)] and len(result.moved_aside) == 1


def test_failed_run_is_recorded_and_the_grid_goes_on(tmp_path, configs):
    results = tmp_path / "results"
    first = FakeTraining(fail={("sick_e_bow_fe", 1)})
    result = run_grid(configs, [1, 2], results, runner=first)
    assert len(first.calls) == 4 and len(result.failed) == 1
    failed = results / "sick_e_bow_fe" / "seed_1"
    info = json.loads((failed / "tune_run.json").read_text())
    assert info["status"] == "failed" and info["error"] == "exit code 1: RuntimeError: boom"
    assert (failed / info["log"]).read_text().endswith("boom\n")
    markdown = render_markdown(report_from_dirs([results]))
    assert "failed (1/2)" in markdown and "RuntimeError: boom" in markdown

    kept = FakeTraining()
    run_grid(configs, [1, 2], results, keep_failed=True, runner=kept)
    assert kept.calls == []
    retried = FakeTraining()
    result = run_grid(configs, [1, 2], results, runner=retried)
    assert retried.calls == [("sick_e_bow_fe", 1)] and status(failed) == "ok"
    assert result.moved_aside[0].name.startswith("seed_1.failed-")


def test_finished_runs_are_tidied_failed_runs_keep_everything(tmp_path, configs):
    results = tmp_path / "results"
    run_grid(configs, [1], results, runner=FakeTraining(fail={("sick_e_bow_ft", 1)}))
    done, failed = (results / stem / "seed_1" for stem in ("sick_e_bow_fe", "sick_e_bow_ft"))
    assert sorted(path.name for path in done.iterdir()) == [
        "config.json", "cost.json", "metrics.json", "model.tar.gz", "tune_run.json",
        "tune_train.log"
    ]  # fmt: skip
    # The archive's size is recorded; an empty file is no archive to predict with.
    assert json.loads((done / "cost.json").read_text()) == {"archive_bytes": 0}
    info = json.loads((done / "tune_run.json").read_text())
    assert info["predictions_error"] == "model.tar.gz is not a model archive"
    tidied = json.loads((done / "tune_run.json").read_text())["tidied"]
    assert sorted(tidied["removed"]) == [
        "best.th", "feature_cache", "model_state_e1_b0.th", "training_state_e1_b0.th"
    ]  # fmt: skip
    assert tidied["freed_mb"] == round(4 * 1024 / 2**20, 1)
    assert (failed / "best.th").is_file() and (failed / "feature_cache").is_dir()

    kept = tmp_path / "kept"
    run_grid(configs, [1], kept, keep_checkpoints=True, runner=FakeTraining())
    run_dir = kept / "sick_e_bow_fe" / "seed_1"
    assert (run_dir / "best.th").is_file() and (run_dir / "model_state_e1_b0.th").is_file()
    assert "tidied" not in json.loads((run_dir / "tune_run.json").read_text())
    parser = argparse.ArgumentParser()
    add_grid_parser(parser.add_subparsers(), "grid")
    args = parser.parse_args(["grid", "x.jsonnet", "--results-dir", "r", "--keep-checkpoints"])
    assert (
        args.keep_checkpoints
        and not parser.parse_args(["grid", "x", "--results-dir", "r"]).keep_checkpoints
    )


def test_runs_share_one_feature_cache_removed_when_the_grid_is_done(tmp_path, configs, monkeypatch):
    monkeypatch.delenv("TUNE_FEATURE_CACHE_DIR", raising=False)
    results = tmp_path / "results"
    first = FakeTraining(interrupt_at=2)
    with pytest.raises(KeyboardInterrupt):
        run_grid(configs, [1], results, runner=first)
    shared = (results / ".feature_cache").resolve()
    assert first.caches == [shared, shared]
    # Interrupted: the cache stays for the rerun, which reads it and then removes it.
    assert sorted(p.name for p in (shared / "ab").iterdir()) == [
        "sick_e_bow_fe_1.f16", "sick_e_bow_ft_1.f16"
    ]  # fmt: skip
    assert len(report_from_dirs([results]).runs) == 2  # the cache folder is no run
    second = FakeTraining()
    run_grid(configs, [1], results, runner=second)
    assert second.caches == [shared] and not shared.exists()

    kept = FakeTraining()
    run_grid(configs, [1], tmp_path / "kept", keep_checkpoints=True, runner=kept)
    assert (tmp_path / "kept" / ".feature_cache" / "ab").is_dir()

    # A cache folder of the user's own wins and is never removed.
    own = tmp_path / "own_cache"
    monkeypatch.setenv("TUNE_FEATURE_CACHE_DIR", str(own))
    mine = FakeTraining()
    run_grid(configs, [1], tmp_path / "mine", runner=mine)
    assert mine.caches == [own, own] and len(list((own / "ab").iterdir())) == 2
    assert not (tmp_path / "mine" / ".feature_cache").exists()


def test_a_real_fe_grid_computes_the_features_once_for_all_seeds(tmp_path, monkeypatch):
    """sick_e_bert_fe on the tiny BERT: seed 2 finds every feature seed 1 cached."""
    monkeypatch.delenv("TUNE_FEATURE_CACHE_DIR", raising=False)
    config = REPO_ROOT / "training_config" / "sick_e_bert_fe.jsonnet"
    ext_vars = {
        "TUNE_DATA_DIR": str(FIXTURE_DATA_DIR),
        "TUNE_BERT_MODEL": str(FIXTURE_MODELS_DIR / "bert-uncased"),
        "TUNE_EPOCHS": "1",
        "TUNE_BATCH_SIZE": "4",
    }
    results = tmp_path / "results"
    shared = results / ".feature_cache"
    run_grid([config], [1], results, ext_vars=ext_vars, keep_checkpoints=True, progress=False)
    entries = {path: path.stat().st_ino for path in shared.rglob("*.f16")}
    assert entries
    run_grid([config], [1, 2], results, ext_vars=ext_vars, keep_checkpoints=True, progress=False)
    # Seed 2 neither added an entry nor rewrote one (a write replaces the file): all hits.
    assert {path: path.stat().st_ino for path in shared.rglob("*.f16")} == entries
    for seed in (1, 2):
        run_dir = results / "sick_e_bert_fe" / f"seed_{seed}"
        assert status(run_dir) == "ok" and not (run_dir / "feature_cache").exists()
        log = (run_dir / "tune_train.log").read_text()
        assert f"frozen features are cached in {shared.resolve()}" in log
        # cost.json: seed 1 computed its entries in its one epoch, seed 2 read them all, so
        # seed 2 ran no encoder pass.
        lookups = json.loads((run_dir / "cost.json").read_text())["epoch_cache_lookups"]
        computed, read = lookups[0]
        assert (computed > 0 and read == 0) if seed == 1 else (computed == 0 and read > 0), lookups
        # (12 training pairs; a sentence that recurs is computed once.)
        both, forward = encoder_passes(load_run(run_dir))
        assert both == 0 and ((0 < forward <= 12) if seed == 1 else forward == 0), forward

    run_grid([config], [1, 2, 3], results, ext_vars=ext_vars, progress=False)
    assert not shared.exists()  # a finished grid without --keep-checkpoints removes it
    assert not list((results / "sick_e_bert_fe" / "seed_3").glob("*.th"))


def test_config_and_ext_var_errors(tmp_path, configs):
    assert expand_configs([str(tmp_path / "configs" / "*.jsonnet")]) == sorted(configs)
    with pytest.raises(ConfigurationError, match="matches no file"):
        expand_configs([str(tmp_path / "*.nothing")])
    with pytest.raises(ConfigurationError, match="does not exist"):
        expand_configs([str(tmp_path / "missing.jsonnet")])
    other = tmp_path / "other" / configs[0].name
    other.parent.mkdir()
    other.write_text("{}")
    with pytest.raises(ConfigurationError, match="would both write to"):
        expand_configs([str(configs[0]), str(other)])
    assert parse_ext_vars(["TUNE_LR=1e-3"]) == {"TUNE_LR": "1e-3"}
    with pytest.raises(ConfigurationError, match="KEY=VALUE"):
        parse_ext_vars(["TUNE_LR"])
    with pytest.raises(ConfigurationError, match="--seeds"):
        parse_ext_vars(["TUNE_SEED=3"])


def test_real_training_resumes_from_a_kill(tmp_path, tiny_config, tiny_ext_vars, make_run, capsys):
    """One real `allennlp train` subprocess, through the command-line entry point."""
    results = tmp_path / "results"
    runs = results / "sst2_bow_fe"
    done_info = {"status": "ok", "task": "sst2", "encoder": "bow", "mode": "fe", "seed": 1}
    make_run(runs / "seed_1", 1, 0.25, archive=True, info=done_info)
    # Trained with this very config (else the grid refuses to reuse it).
    rendered = render_config(tiny_config, {**tiny_ext_vars, "TUNE_SEED": "1"})
    (runs / "seed_1" / "config.json").write_text(json.dumps(rendered))
    # What a kill leaves: AllenNLP's files without tune_run.json, and the pending log.
    make_run(runs / "seed_2", 2, metrics=False)
    (runs / "seed_2.log").write_text("killed here\n")

    ext_vars = [f"--ext-var={key}={value}" for key, value in tiny_ext_vars.items()]
    html = tmp_path / "r.html"
    argv = [tiny_config, "--seeds", 1, 2, "--results-dir", results, "--no-progress", *ext_vars]
    run_cli(add_grid_parser, [*argv, "--html", html])

    assert (
        json.loads((runs / "seed_1" / "metrics.json").read_text())["best_validation_accuracy"]
        == 0.25
    )
    rerun = runs / "seed_2"
    assert status(rerun) == "ok" and (rerun / "model.tar.gz").is_file()
    assert not list(rerun.glob("*.th"))  # AllenNLP's real checkpoint names were all tidied
    assert json.loads((rerun / "config.json").read_text())["random_seed"] == 2  # TUNE_SEED
    assert "Beginning training" in (rerun / "tune_train.log").read_text()
    # What it cost and predicted: the archive's size and the dev predictions, in input order.
    cost = json.loads((rerun / "cost.json").read_text())
    assert cost["archive_bytes"] == (rerun / "model.tar.gz").stat().st_size > 0
    predictions = [json.loads(line) for line in (rerun / "dev_predictions.jsonl").open()]
    dev = (FIXTURE_DATA_DIR / "sst-2" / "dev.tsv").read_text().splitlines()[1:]
    assert [p["index"] for p in predictions] == list(range(len(dev)))
    assert [p["gold"] for p in predictions] == [row.split("\t")[1] for row in dev]
    assert json.loads((rerun / "tune_run.json").read_text())["predictions"] == (
        "dev_predictions.jsonl"
    )
    [aside] = runs.glob("seed_2.incomplete-*")
    assert (aside / "tune_train.log").read_text() == "killed here\n"

    out = capsys.readouterr().out
    assert "| SST-2 | accuracy |" in out and "(n=2)" in out
    assert html.exists()

    run_cli(add_report_parser, [results])
    assert "## bow" in capsys.readouterr().out


@pytest.mark.parametrize("sigint_ignored", [False, True])
def test_sigterm_stops_the_training_child_and_keeps_finished_runs(
    tmp_path, configs, sigint_ignored
):
    """`kill <tune-grid>` acts like Ctrl-C: the child is stopped, finished runs stay; also when
    tune-grid was started with SIGINT ignored (in the background of a script, under nohup)."""
    if sigint_ignored:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            _sigterm_stops_the_child(tmp_path, configs)
        finally:
            signal.signal(signal.SIGINT, previous)
    else:
        _sigterm_stops_the_child(tmp_path, configs)


def _sigterm_stops_the_child(tmp_path, configs):
    children = []

    def sleeping_training(command, environment, log_path):
        if environment["TUNE_SEED"] == "1":
            return FakeTraining()(command, environment, log_path)
        # Stands in for a long `allennlp train`; the timer below signals tune-grid meanwhile.
        children.append(log_path)
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM)).start()
        return train_subprocess(["sleep", "30"], environment, log_path)

    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_grid(configs[:1], [1, 2], tmp_path / "results", runner=sleeping_training)
    assert time.monotonic() - started < 10  # the child got SIGINT and did not sleep on
    assert status(tmp_path / "results" / "sick_e_bow_fe" / "seed_1") == "ok"
    assert len(children) == 1 and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


# Complete runs are reused only while they match the command (fingerprints) -------------------

# A config whose learning rate is an ext var (TUNE_LR, default 0.01) and that names a data file.
READING_CONFIG = """{
  random_seed: std.parseInt(std.extVar("TUNE_SEED")),
  train_data_path: std.extVar("DATA"),
  trainer: {validation_metric: "+accuracy",
            optimizer: {lr: std.parseJson(std.extVar("RATE"))}},
}"""


def test_a_changed_run_is_refused_and_retrain_changed_trains_exactly_it(tmp_path, configs, capsys):
    data = tmp_path / "train.tsv"
    data.write_text("a\t1\n")
    reading = tmp_path / "configs" / "sick_e_bow_sf.jsonnet"
    reading.write_text(READING_CONFIG)
    grid = [*configs, reading]
    results = tmp_path / "results"
    ext_vars = {"DATA": str(data), "RATE": "0.01"}
    run_grid(grid, [1, 2], results, ext_vars=ext_vars, runner=FakeTraining(), progress=False)
    info = json.loads((results / "sick_e_bow_sf" / "seed_1" / "tune_run.json").read_text())
    digest = info["fingerprint"]["files"][str(data)]
    assert digest.startswith("sha256:") and "torch" in info["fingerprint"]["packages"]
    untouched = FakeTraining()
    result = run_grid(grid, [1, 2], results, ext_vars=ext_vars, runner=untouched)
    assert untouched.calls == [] and len(result.skipped) == 6

    # Another rate: the two runs of the config that reads it are refused, by name, before any
    # training or moving; the planner never ran either.
    capsys.readouterr()
    faster = {**ext_vars, "RATE": "0.1"}
    with pytest.raises(ConfigurationError) as refused:
        run_grid(grid, [1, 2], results, ext_vars=faster, runner=untouched, plan_only=True)
    message = str(refused.value)
    assert "2 complete run(s)" in message and "--retrain-changed" in message
    for seed in (1, 2):
        assert f"sick_e_bow_sf/seed_{seed}: RATE 0.01 -> 0.1; trainer.optimizer.lr 0.01 -> 0.1" in (
            message
        )
    assert "sick_e_bow_fe" not in message and untouched.calls == []
    assert "plan of the" not in capsys.readouterr().err

    retraining = FakeTraining()
    result = run_grid(
        grid, [1, 2], results, ext_vars=faster, runner=retraining, retrain_changed=True
    )
    assert retraining.calls == [("sick_e_bow_sf", 1), ("sick_e_bow_sf", 2)]
    assert result.retrained == result.trained and len(result.skipped) == 4
    assert sorted(path.name.split(".")[1][:8] for path in result.moved_aside) == ["changed-"] * 2
    # The report reads the new runs only (the changed ones are superseded attempts).
    report = report_from_dirs([results])
    assert report.superseded == 2 and len(report.runs) == 6

    # The data file's content changes under the same path: refused, naming the file.
    data.write_text("a\t1\nb\t0\n")
    with pytest.raises(ConfigurationError, match=r"train\.tsv changed \(train_data_path: sha256:"):
        run_grid(grid, [1], results, ext_vars=faster, runner=untouched)
    assert untouched.calls == []


def test_a_cell_of_runs_trained_on_other_data_gets_no_verdict(tmp_path, make_run):
    """The report flags the content change and withholds the paired verdict of that mode."""
    results = tmp_path / "results"
    for mode, seed, digest in (("fe", 1, "a"), ("fe", 2, "b"), ("ft", 1, "a"), ("ft", 2, "a")):
        run = results / f"sick_e_bow_{mode}" / f"seed_{seed}"
        info = {"status": "ok", "fingerprint": {"files": {"/d/dev.tsv": f"sha256:{digest}"}}}
        make_run(run, seed, 0.5 + seed / 10, info=info)
        config = json.loads((run / "config.json").read_text())
        (run / "config.json").write_text(
            json.dumps({**config, "validation_data_path": "/d/dev.tsv"})
        )
        lines = [
            {"index": i, "gold": "1", "prediction": "1" if i % seed else "0"} for i in range(20)
        ]
        (run / "dev_predictions.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    markdown = render_markdown(report_from_dirs([results]))
    assert "validation_data_path (content)" in markdown
    assert "fe: no verdict: its runs were trained differently" in markdown
    assert "| ft vs fe" not in markdown.replace("Verdict ft vs fe", "")


def test_moved_aside_attempts_lose_their_checkpoints_unless_kept(tmp_path, configs):
    results = tmp_path / "results"
    with pytest.raises(KeyboardInterrupt):
        run_grid(configs[:1], [1], results, runner=FakeTraining(interrupt_at=1))
    [aside] = run_grid(configs[:1], [1], results, runner=FakeTraining()).moved_aside
    assert sorted(path.name for path in aside.iterdir()) == ["config.json", "tune_train.log"]
    kept = tmp_path / "kept"
    with pytest.raises(KeyboardInterrupt):
        run_grid(configs[:1], [1], kept, runner=FakeTraining(interrupt_at=1))
    result = run_grid(configs[:1], [1], kept, runner=FakeTraining(), keep_checkpoints=True)
    assert len(list(result.moved_aside[0].glob("*.th"))) == 3


def test_a_results_folder_that_is_a_file_is_refused(tmp_path, configs, capsys):
    (tmp_path / "file").write_text("x")
    for results in (tmp_path / "file", tmp_path / "file" / "below"):
        with pytest.raises(ConfigurationError, match="a file, not a folder"):
            run_grid(configs, [1], results, runner=FakeTraining())
    argv = [configs[0], "--results-dir", tmp_path / "file" / "below", "--no-progress"]
    with pytest.raises(SystemExit) as exit:
        run_cli(add_grid_parser, argv)
    assert exit.value.code == 2
    assert "lies under" in capsys.readouterr().err
