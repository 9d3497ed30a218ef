import argparse
import glob
import hashlib
import io
import json
import logging
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import optuna
import pytest
from allennlp.common.checks import ConfigurationError

from allennlp_tune.experiments.search import (
    SearchParam,
    check_config,
    enqueue_settings,
    parse_settings,
    run_search,
    storage_with_driver,
)
from allennlp_tune.reporting.render import render_markdown
from allennlp_tune.reporting.report import report_from_dirs

LR = "TUNE_LR=1e-3:1e-1:log"
PARAMS = [LR, "TUNE_DROPOUT=0.0,0.5", "TUNE_EPOCHS=2:3"]


class PruneTrialOne(optuna.pruners.BasePruner):
    """Prunes trial 1 after its second epoch, whatever its metric; notes the feature cache."""

    def __init__(self):
        self.caches = set()

    def prune(self, study, trial):
        cache = os.environ["TUNE_FEATURE_CACHE_DIR"]
        self.caches.add(cache)
        os.makedirs(cache, exist_ok=True)
        open(os.path.join(cache, f"entry_{trial.number}"), "w").close()
        return trial.number == 1 and (trial.last_step or 0) >= 1


def test_param_specs():
    lr = SearchParam.parse("TUNE_LR=1e-5:1e-3:log")
    assert (lr.low, lr.high, lr.log, lr.integer) == (1e-5, 1e-3, True, False)
    assert SearchParam.parse("TUNE_EPOCHS=1:4").integer
    assert not SearchParam.parse("TUNE_DROPOUT=0:0.5").integer
    assert SearchParam.parse("TUNE_BATCH=8, 16,32").choices == ("8", "16", "32")
    for bad, message in [
        ("TUNE_LR", "expected NAME=low:high"),
        ("TUNE_LR=1e-3", "--ext-var TUNE_LR=1e-3"),
        ("TUNE_LR=1:x", "expected"),
        ("TUNE_LR=1e-3:1e-5", "must be below high"),
        ("TUNE_LR=0:1:log", "low > 0"),
        ("TUNE_LR=1:2:lin", "expected"),
        ("TUNE_SEED=1:9", "--seed"),
    ]:
        with pytest.raises(ConfigurationError, match=message):
            SearchParam.parse(bad)


def test_config_check_catches_a_param_the_config_does_not_read(tiny_config, tiny_ext_vars):
    ext_vars = {**tiny_ext_vars, "TUNE_SEED": "1"}
    assert check_config(tiny_config, [SearchParam.parse("TUNE_LR=1e-3:1e-1")], ext_vars) == (
        "accuracy",
        True,
    )
    with pytest.raises(ConfigurationError, match='std.extVar\\("TUNE_LRR"\\)'):
        check_config(tiny_config, [SearchParam.parse("TUNE_LRR=1e-3:1e-1")], ext_vars)
    del ext_vars["TUNE_EPOCHS"]
    with pytest.raises(ConfigurationError, match="does not evaluate"):
        check_config(tiny_config, [SearchParam.parse("TUNE_LR=1e-3:1e-1")], ext_vars)


def test_search_writes_sqlite_study_and_best_params(
    tmp_path, tiny_config, tiny_ext_vars, monkeypatch
):
    monkeypatch.delenv("TUNE_FEATURE_CACHE_DIR", raising=False)
    fixed = {key: tiny_ext_vars[key] for key in ("TUNE_DATA_DIR", "TUNE_WEIGHT_DECAY")}
    params = [SearchParam.parse(spec) for spec in PARAMS]
    pruner = PruneTrialOne()
    # The command's own root handler (AllenNLP's main sets one on the terminal's stderr) gets
    # nothing from the trials, which log to their out.log, and is there again afterwards.
    terminal = logging.StreamHandler(io.StringIO())
    root = logging.getLogger()
    root.addHandler(terminal)
    level, root.level = root.level, logging.INFO
    try:
        result = run_search(
            tiny_config,
            params,
            trials=3,
            study_name="bow",
            results_dir=tmp_path,
            ext_vars=fixed,
            pruner=pruner,
            sampler=optuna.samplers.RandomSampler(seed=0),
        )
        assert terminal in root.handlers
    finally:
        root.removeHandler(terminal)
        root.setLevel(level)
    assert terminal.stream.getvalue() == ""
    # (Lines of loggers no command quiets: allennlp.common.params may be at WARNING here.)
    assert "Beginning training" in (tmp_path / "bow" / "trial_0" / "out.log").read_text()
    predicted = (tmp_path / "bow" / "trial_0" / "tune_predict.log").read_text()
    assert "loading archive file" in predicted

    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    study = optuna.load_study(study_name="bow", storage=storage)
    states = [trial.state for trial in study.trials]
    assert states == [
        optuna.trial.TrialState.COMPLETE,
        optuna.trial.TrialState.PRUNED,
        optuna.trial.TrialState.COMPLETE,
    ]
    # The pruning callback reported every epoch of the finished trials.
    for trial in study.trials:
        epochs = int(trial.user_attrs["ext_vars"]["TUNE_EPOCHS"])
        expected = 2 if trial.number == 1 else epochs
        assert sorted(trial.intermediate_values) == list(range(expected))

    best = json.loads(result.best_json.read_text())
    assert best["trial"] == study.best_trial.number and best["value"] == study.best_value
    assert best["metric"] == "accuracy" and best["direction"] == "maximize"
    assert set(best["ext_vars"]) == {"TUNE_LR", "TUNE_DROPOUT", "TUNE_EPOCHS"}
    assert 1e-3 <= float(best["ext_vars"]["TUNE_LR"]) <= 1e-1
    assert best["trials"] == {"complete": 2, "pruned": 1}
    # The trial trained with exactly these values.
    trained = json.loads((tmp_path / "bow" / f"trial_{best['trial']}" / "config.json").read_text())
    assert trained["trainer"]["optimizer"]["lr"] == float(best["ext_vars"]["TUNE_LR"])
    assert trained["random_seed"] == 1
    # best_params.env is ready to source.
    echoed = subprocess.run(
        ["bash", "-c", f"source {result.best_env} && echo $TUNE_LR $TUNE_DROPOUT $TUNE_EPOCHS"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert echoed == [best["ext_vars"][k] for k in ("TUNE_LR", "TUNE_DROPOUT", "TUNE_EPOCHS")]

    markdown = render_markdown(report_from_dirs([tmp_path]))
    assert "| sst2_bow_fe_bow/trial_1 | accuracy | pruned (1/1) |" in markdown

    # Finished trials keep their archive but no checkpoints; the pruned one keeps no weights.
    for trial in study.trials:
        trial_dir = tmp_path / "bow" / f"trial_{trial.number}"
        assert not list(trial_dir.glob("*.th")), sorted(p.name for p in trial_dir.iterdir())
        complete = trial.state == optuna.trial.TrialState.COMPLETE
        assert (trial_dir / "model.tar.gz").is_file() == complete
        # Finished trials also leave their archive's size and their dev predictions.
        assert (trial_dir / "dev_predictions.jsonl").is_file() == complete
        if complete:
            cost = json.loads((trial_dir / "cost.json").read_text())
            assert cost["archive_bytes"] == (trial_dir / "model.tar.gz").stat().st_size
            lines = (trial_dir / "dev_predictions.jsonl").read_text().splitlines()
            assert [json.loads(line)["index"] for line in lines] == list(range(len(lines)))
        info = json.loads((trial_dir / "tune_run.json").read_text())
        assert "best.th" in info["tidied"]["removed"] and info["tidied"]["freed_mb"] >= 0
        # A finished trial records, as a grid's run does, what it trained from: the digests of
        # the files its config names (its data) and the package versions.
        if complete:
            config = json.loads((trial_dir / "config.json").read_text())
            train = str(Path(config["train_data_path"]).resolve())
            digest = info["fingerprint"]["files"][train]
            assert digest == "sha256:" + hashlib.sha256(Path(train).read_bytes()).hexdigest()
            assert "torch" in info["fingerprint"]["packages"]
        else:
            assert "fingerprint" not in info
    # The trials shared one feature cache folder, gone with the worker.
    [cache] = pruner.caches
    worker = f"{socket.gethostname()}-{os.getpid()}"
    assert cache == str((tmp_path / "bow" / f".feature_cache-{worker}").resolve())
    assert not os.path.exists(cache) and "TUNE_FEATURE_CACHE_DIR" not in os.environ

    # A cache folder of the user's own, as an ext var, reaches the trials and stays.
    own = tmp_path / "own_cache"
    mine = PruneTrialOne()
    run_search(tiny_config, params, trials=1, study_name="own", results_dir=tmp_path,
               ext_vars={**fixed, "TUNE_FEATURE_CACHE_DIR": str(own)}, pruner=mine)  # fmt: skip
    assert mine.caches == {str(own)} and (own / "entry_0").is_file()
    assert "TUNE_FEATURE_CACHE_DIR" not in os.environ


def postgres_bin_dir():
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.path.exists(f"{candidate}/initdb") and os.path.exists(f"{candidate}/pg_ctl"):
            return candidate
    initdb = shutil.which("initdb")
    return os.path.dirname(initdb) if initdb and shutil.which("pg_ctl") else None


@pytest.fixture
def postgres_url():
    """A throwaway PostgreSQL server on 127.0.0.1 (initdb + pg_ctl in a temp dir)."""
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        pytest.skip(
            "PostgreSQL server binaries (initdb, pg_ctl) not found: apt-get install postgresql"
        )
    as_server_user = []
    base = tempfile.mkdtemp(prefix="tune-pg-")
    if os.geteuid() == 0:  # initdb refuses to run as root
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no 'postgres' user to run the server as")
        os.chown(base, user.pw_uid, user.pw_gid)
        as_server_user = ["runuser", "-u", "postgres", "--"]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    data = os.path.join(base, "data")
    pg_ctl = [*as_server_user, f"{bin_dir}/pg_ctl", "-D", data]
    subprocess.run(
        [
            *as_server_user,
            f"{bin_dir}/initdb",
            "-D",
            data,
            "-U",
            "tune",
            "-A",
            "trust",
            "--no-sync",
            "-E",
            "UTF8",
        ],
        check=True,
        capture_output=True,
    )
    options = f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(
        [*pg_ctl, "-l", f"{base}/server.log", "-w", "-t", "60", "-o", options, "start"],
        check=True,
        capture_output=True,
    )
    try:
        # Trust authentication ignores the password; it is there to check it is never written.
        yield f"postgresql://tune:secret@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*pg_ctl, "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


def test_two_workers_share_a_postgresql_study(tmp_path, tiny_config, tiny_ext_vars, postgres_url):
    """`allennlp tune-search` in a subprocess and `run_search` in this process, one study."""
    storage = storage_with_driver(postgres_url)
    fixed = {key: value for key, value in tiny_ext_vars.items() if key != "TUNE_LR"}
    # The import registers the subcommand whether or not allennlp_tune's __init__ does.
    code = "import allennlp_tune.commands.tune_search; from allennlp.commands import main; main()"
    command = [sys.executable, "-c", code, "tune-search", str(tiny_config), "--param", LR]
    command += ["--trials", "2", "--study-name", "shared", "--storage", postgres_url]
    command += ["--results-dir", str(tmp_path / "worker_0")]
    command += [f"--ext-var={key}={value}" for key, value in fixed.items()]
    worker = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        # Join the study once the other worker has started a trial (it first imports AllenNLP).
        deadline = time.monotonic() + 240
        while worker.poll() is None and time.monotonic() < deadline:
            names = [study.study_name for study in optuna.get_all_study_summaries(storage)]
            if "shared" in names and optuna.load_study(study_name="shared", storage=storage).trials:
                break
            time.sleep(0.5)
        run_search(
            tiny_config,
            [SearchParam.parse(LR)],
            trials=2,
            study_name="shared",
            results_dir=tmp_path / "worker_1",
            storage=postgres_url,
            ext_vars=fixed,
        )
        output = worker.communicate(timeout=240)[0]
    finally:
        if worker.poll() is None:
            worker.kill()
    assert worker.returncode == 0, output[-3000:]

    study = optuna.load_study(study_name="shared", storage=storage)
    assert sorted(trial.number for trial in study.trials) == [0, 1, 2, 3]
    assert all(trial.state == optuna.trial.TrialState.COMPLETE for trial in study.trials)
    by_worker = {}
    for trial in study.trials:
        by_worker.setdefault(trial.user_attrs["worker"], []).append(trial.number)
    assert sorted(len(numbers) for numbers in by_worker.values()) == [2, 2], by_worker
    bests = [
        json.loads((tmp_path / f"worker_{index}" / "shared" / "best_params.json").read_text())
        for index in range(2)
    ]
    # The worker that finished last saw all four trials, whichever worker ran them.
    assert max(sum(best["trials"].values()) for best in bests) == 4
    assert bests[0]["storage"].startswith("postgresql+psycopg2://tune:***@127.0.0.1")
    assert "secret" not in (tmp_path / "worker_0" / "shared" / "best_params.json").read_text()


def test_a_seeded_search_resumed_draws_new_settings(tmp_path, tiny_config, tiny_ext_vars):
    """
    A seeded sampler restarts its sequence in every process: run_search offsets the seed by the
    trials the study has, so a resumed search does not repeat its first settings, while a new
    study with the same seed draws exactly what the first one drew.
    """
    fixed = {key: tiny_ext_vars[key] for key in ("TUNE_DATA_DIR", "TUNE_WEIGHT_DECAY")}
    fixed.update(TUNE_EPOCHS="1", TUNE_DROPOUT="0.0")
    params = [SearchParam.parse(LR)]

    def search(study_name):
        run_search(tiny_config, params, trials=1, study_name=study_name, results_dir=tmp_path,
                   ext_vars=fixed, sampler_seed=7)  # fmt: skip
        study = optuna.load_study(study_name=study_name, storage=f"sqlite:///{tmp_path}/optuna.db")
        return [trial.params["TUNE_LR"] for trial in study.trials]

    first = search("resumed")
    assert len(first) == 1
    # The same study again, as equal_budget.sh resumes it: a second draw, not the first again.
    resumed = search("resumed")
    assert resumed[0] == first[0] and resumed[1] != first[0]
    # A new study with the same seed starts where the first one started.
    assert search("fresh") == first
    random = optuna.samplers.RandomSampler(0)
    with pytest.raises(ConfigurationError, match="not both"):
        run_search(tiny_config, params, trials=1, study_name="both", results_dir=tmp_path,
                   ext_vars=fixed, sampler=random, sampler_seed=7)  # fmt: skip


def test_enqueued_settings_run_first_and_only_once(tmp_path, tiny_config, tiny_ext_vars):
    """
    --enqueue: the settings run as the study's first trial (and reach the config), count among
    the trials, and a resumed search with the same --enqueue does not run them again.
    """
    fixed = {key: tiny_ext_vars[key] for key in ("TUNE_DATA_DIR", "TUNE_WEIGHT_DECAY")}
    fixed.update(TUNE_EPOCHS="1", TUNE_DROPOUT="0.0")
    params = [SearchParam.parse(LR)]
    recipe = parse_settings("TUNE_LR=0.05", params)

    def search(trials):
        run_search(tiny_config, params, trials=trials, study_name="s", results_dir=tmp_path,
                   ext_vars=fixed, sampler_seed=7, enqueue=[recipe])  # fmt: skip
        return optuna.load_study(study_name="s", storage=f"sqlite:///{tmp_path}/optuna.db")

    study = search(2)
    assert [t.params["TUNE_LR"] for t in study.trials][0] == 0.05
    assert len(study.trials) == 2 and study.trials[1].params["TUNE_LR"] != 0.05
    info = json.loads((tmp_path / "s" / "trial_0" / "tune_run.json").read_text())
    assert info["ext_vars"]["TUNE_LR"] == "0.05"
    config = json.loads((tmp_path / "s" / "trial_0" / "config.json").read_text())
    assert config["trainer"]["optimizer"]["lr"] == 0.05
    study = search(1)
    assert len(study.trials) == 3 and study.trials[2].params["TUNE_LR"] != 0.05


def test_enqueue_skips_settings_the_study_has_and_retries_failed_ones():
    params = [SearchParam.parse(LR), SearchParam.parse("TUNE_EPOCHS=2:3")]
    first = parse_settings("TUNE_LR=0.01 TUNE_EPOCHS=2", params)
    second = parse_settings("TUNE_EPOCHS=3 TUNE_LR=0.02", params)
    study = optuna.create_study()
    distributions = {
        "TUNE_LR": optuna.distributions.FloatDistribution(1e-3, 1e-1, log=True),
        "TUNE_EPOCHS": optuna.distributions.IntDistribution(2, 3),
    }
    study.add_trial(optuna.trial.create_trial(
        state=optuna.trial.TrialState.COMPLETE, value=0.5, params=first,
        distributions=distributions,
    ))  # fmt: skip
    study.add_trial(optuna.trial.create_trial(
        state=optuna.trial.TrialState.FAIL, params=second, distributions=distributions,
    ))  # fmt: skip
    # The complete one is not queued again; the failed one is; a second call queues nothing.
    assert enqueue_settings(study, [first, second]) == 1
    waiting = study.get_trials(states=(optuna.trial.TrialState.WAITING,))
    assert [t.system_attrs["fixed_params"] for t in waiting] == [second]
    assert enqueue_settings(study, [first, second]) == 0
    # A value that differs in the last digit is another setting.
    assert enqueue_settings(study, [{**first, "TUNE_LR": 0.010000001}]) == 1


@pytest.mark.parametrize(
    "text, message",
    [
        ("TUNE_LR=0.01", "give a value for TUNE_EPOCHS"),
        ("TUNE_LR=0.5 TUNE_EPOCHS=2", "outside its --param range"),
        ("TUNE_LR=0.01 TUNE_EPOCHS=2.5", "is not an integer"),
        ("TUNE_LR=fast TUNE_EPOCHS=2", "is not a number"),
        ("TUNE_LR=0.01 TUNE_EPOCHS=2 TUNE_SEED=3", "TUNE_SEED is not searched"),
        ("TUNE_LR=0.01 TUNE_LR=0.02 TUNE_EPOCHS=2", "TUNE_LR is given twice"),
        ("TUNE_LR 0.01", "'TUNE_LR' is not NAME=VALUE"),
        ("TUNE_LR=0.01 TUNE_DROPOUT=0.2 TUNE_EPOCHS=2", "not one of the --param choices"),
    ],
)
def test_enqueue_settings_that_do_not_fit_the_params_are_refused(text, message):
    params = [SearchParam.parse(p) for p in (LR, "TUNE_EPOCHS=2:3", "TUNE_DROPOUT=0.0,0.5")]
    if "TUNE_DROPOUT" not in text and "not one of" not in message:
        params = params[:2]
    with pytest.raises(ConfigurationError, match=message) as caught:
        parse_settings(text, params)
    assert f"--enqueue {text!r}" in str(caught.value)


def test_sigterm_ends_tune_search_with_a_short_message(
    tmp_path, tiny_config, tiny_ext_vars, capsys
):
    """`kill <tune-search>` in the middle of a trial ends the command (exit 130, one short
    message, no traceback) instead of failing that trial and starting the next; the stopped
    trial is marked interrupted in the study."""
    from allennlp.common.util import install_sigterm_handler
    from allennlp.training.gradient_descent_trainer import GradientDescentTrainer

    from allennlp_tune.commands.tune_search import add_search_parser

    fixed = [f"{key}={tiny_ext_vars[key]}" for key in ("TUNE_DATA_DIR", "TUNE_WEIGHT_DECAY")]
    argv = [str(tiny_config), "--param", LR, "--trials", "2", "--study-name", "s"]
    argv += ["--results-dir", str(tmp_path), "--ext-var", "TUNE_EPOCHS=1"]
    argv += ["--ext-var", "TUNE_DROPOUT=0.0"] + [f"--ext-var={value}" for value in fixed]
    parser = argparse.ArgumentParser()
    add_search_parser(parser.add_subparsers(), "tune-search")
    args = parser.parse_args(["tune-search", *argv])

    trained = GradientDescentTrainer._train_epoch

    def signalled(self, epoch):
        os.kill(os.getpid(), signal.SIGTERM)
        return trained(self, epoch)

    previous = signal.getsignal(signal.SIGTERM)
    install_sigterm_handler()
    GradientDescentTrainer._train_epoch = signalled
    try:
        with pytest.raises(SystemExit) as exit:
            args.func(args)
    finally:
        GradientDescentTrainer._train_epoch = trained
        signal.signal(signal.SIGTERM, previous)
    assert exit.value.code == 130
    err = capsys.readouterr().err
    assert "tune-search: interrupted" in err and "Traceback" not in err
    [trial] = optuna.load_study(study_name="s", storage=f"sqlite:///{tmp_path}/optuna.db").trials
    assert trial.state == optuna.trial.TrialState.FAIL and trial.user_attrs["interrupted"]


class PruneEveryTrial(optuna.pruners.BasePruner):
    def prune(self, study, trial):
        return True


def test_a_trial_is_not_pruned_after_its_last_epoch(tmp_path, tiny_config, tiny_ext_vars):
    """A pruner that gives up on every trial stops a 2-epoch trial after its first epoch, but
    lets a 1-epoch trial finish: pruning after the last epoch would save no training and throw
    away a finished run (its archive, predictions and value)."""
    fixed = {key: tiny_ext_vars[key] for key in ("TUNE_DATA_DIR", "TUNE_WEIGHT_DECAY")}

    def search(epochs):
        run_search(tiny_config, [SearchParam.parse(LR)], trials=1, study_name=f"e{epochs}",
                   results_dir=tmp_path, ext_vars={**fixed, "TUNE_EPOCHS": str(epochs),
                   "TUNE_DROPOUT": "0.0"}, pruner=PruneEveryTrial())  # fmt: skip
        storage = f"sqlite:///{tmp_path / 'optuna.db'}"
        [trial] = optuna.load_study(study_name=f"e{epochs}", storage=storage).trials
        return trial

    with pytest.raises(ConfigurationError, match="No trial of study 'e2' has completed"):
        search(2)
    [pruned] = optuna.load_study(study_name="e2", storage=f"sqlite:///{tmp_path}/optuna.db").trials
    assert pruned.state == optuna.trial.TrialState.PRUNED and list(pruned.intermediate_values) == [
        0
    ]
    finished = search(1)
    assert finished.state == optuna.trial.TrialState.COMPLETE
    assert list(finished.intermediate_values) == [0]
    assert (tmp_path / "e1" / "trial_0" / "model.tar.gz").is_file()


def test_the_last_epoch_is_the_planned_one_or_where_patience_runs_out():
    from allennlp.training.metric_tracker import MetricTracker

    from allennlp_tune.training.trainer_access import ends_after

    class Trainer:
        _num_epochs = 5
        _metric_tracker = MetricTracker("+accuracy", patience=1)

    trainer = Trainer()
    trainer._metric_tracker.add_metrics({"accuracy": 0.6})
    assert not ends_after(trainer, 0) and ends_after(trainer, 4)
    trainer._metric_tracker.add_metrics({"accuracy": 0.5})  # no better: patience 1 runs out
    assert ends_after(trainer, 1)
