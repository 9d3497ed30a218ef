"""
Workers sharing one grid (`--coordinator`, `allennlp_tune.experiments.workers`): processes
forked from the test (they start at once), each a worker, on an SQLite or PostgreSQL
coordinator. Their runs are stand-in trainings (`ChildTraining`): a real child process per run,
started by the grid's own `train_subprocess` (so it inherits the run's lock and dies with its
worker), that writes what `allennlp train` writes. One test trains the tiny fixture config for
real through two `allennlp tune-grid` commands.
"""

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

import optuna
import pytest
from allennlp.common.checks import ConfigurationError

from allennlp_tune.commands.tune_compare import add_compare_parser
from allennlp_tune.commands.tune_grid import add_grid_parser
from allennlp_tune.experiments.grid import run_grid
from allennlp_tune.experiments.process import train_subprocess
from allennlp_tune.experiments.search import storage_with_driver
from allennlp_tune.experiments.workers import MARKER_NAME, Coordinator, claim_trial
from allennlp_tune.planning.plan import render_config
from tests.results.test_grid import GRID_CONFIG, FakeTraining, run_cli
from tests.results.test_search import postgres_url  # noqa: F401 (a fixture)

REPO = Path(__file__).resolve().parents[2]

# What `allennlp train` leaves, written by a child process: the rendered config at once, then
# after `pause` seconds the metrics (a function of the run alone) and an archive.
CHILD = r"""
import json, os, sys, time
from pathlib import Path
run_dir, seed, pause, config = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
Path(os.environ["TUNE_FEATURE_CACHE_DIR"]).mkdir(parents=True, exist_ok=True)
run_dir.mkdir(parents=True)
(run_dir / "config.json").write_text(config)
time.sleep(pause)
score = 0.5 + seed / 10 + (0.05 if run_dir.parent.name.endswith("_ft") else 0.0)
(run_dir / "metrics.json").write_text(json.dumps({"best_validation_accuracy": score}))
(run_dir / "model.tar.gz").write_bytes(b"")
"""


class ChildTraining:
    """
    Trains a run in a child process (`CHILD`) through `train_subprocess`, after every worker
    has started (`barrier`: one file per worker, `workers` of them). Appends `<pid> <run>` to
    `calls` for every training it starts, and a worker's first run waits until every worker
    has claimed one, so that all take part however slowly one of them starts on a loaded
    machine. The first run of a worker given `stall_s` pauses that long (long enough to be
    killed in).
    """

    def __init__(self, calls, barrier=None, workers=1, pause_s=0.3, stall_s=None):
        self.calls, self.barrier, self.workers = Path(calls), barrier, workers
        self.pause_s, self.stall_s, self.started = pause_s, stall_s, 0

    def __call__(self, command, environment, log_path):
        deadline = time.monotonic() + 120
        while self.barrier and len(os.listdir(self.barrier)) < self.workers:
            assert time.monotonic() < deadline, "the other workers never started"
            time.sleep(0.1)
        run_dir = Path(command[command.index("-s") + 1])
        config = render_config(Path(command[command.index("train") + 1]), environment, None)
        pause = self.stall_s if self.stall_s and not self.started else self.pause_s
        self.started += 1
        with open(self.calls, "a") as calls:
            calls.write(f"{os.getpid()} {run_dir.parent.name}/{run_dir.name}\n")
        while self.started == 1 and len(self._claimants()) < self.workers:
            assert time.monotonic() < deadline, "the other workers never claimed a run"
            time.sleep(0.1)
        seed = environment["TUNE_SEED"]
        child = [sys.executable, "-c", CHILD, str(run_dir), seed, str(pause), json.dumps(config)]
        return train_subprocess(child, environment, log_path)

    def _claimants(self):
        """The workers (pids) that have started a run so far."""
        return {line.split()[0] for line in self.calls.read_text().splitlines()}


def worker_main(spec) -> None:
    """A worker process (forked from the test, so that it starts at once): runs the grid with
    `ChildTraining`, writes what it did to `spec["out"]`, or its traceback and exits 1."""
    try:
        (Path(spec["barrier"]) / str(os.getpid())).touch()
        runner = ChildTraining(
            spec["calls"], spec["barrier"], spec["workers"], stall_s=spec.get("stall_s")
        )
        # A short grace only where a worker is killed: elsewhere a loaded machine's late
        # heartbeat must not make a live worker's run stale.
        coordinator = Coordinator(spec["url"], heartbeat_s=1, grace_s=spec.get("grace_s", 60))
        result = run_grid(
            [Path(config) for config in spec["configs"]],
            spec["seeds"],
            Path(spec["results"]),
            runner=runner,
            predict=None,
            plan=False,
            progress=False,
            coordinator=coordinator,
        )
        done = {"trained": len(result.trained), "skipped": len(result.skipped)}
        Path(spec["out"]).write_text(json.dumps(done))
    except BaseException:
        Path(spec["out"]).write_text(traceback.format_exc())
        os._exit(1)
    os._exit(0)


@pytest.fixture
def forked():
    """The worker processes a test starts, killed at its end if still alive (a failed test)."""
    processes = []
    yield processes
    for process in processes:
        if process.is_alive():
            process.kill()
            process.join()


def start_workers(forked, tmp_path, configs, url, count=2, stall_first=False, seeds=(1, 2)):
    """`count` worker processes on one grid (2 configs x `seeds`); the first stalls in its
    first run with `stall_first`."""
    barrier = tmp_path / "barrier"
    barrier.mkdir(exist_ok=True)
    for index in range(count):
        spec = {
            "barrier": str(barrier),
            "workers": count,
            "calls": str(tmp_path / "calls.txt"),
            "out": str(tmp_path / f"worker_{index}.out"),
            "url": url,
            "configs": [str(config) for config in configs],
            "seeds": list(seeds),
            "results": str(tmp_path / "results"),
            "stall_s": 120 if stall_first and index == 0 else None,
            "grace_s": 3 if stall_first else 60,
        }
        process = multiprocessing.get_context("fork").Process(target=worker_main, args=(spec,))
        process.start()
        process.out = Path(spec["out"])
        forked.append(process)
    return forked


def finish(process, timeout=180):
    process.join(timeout)
    assert process.exitcode == 0, process.out.read_text()[-3000:]
    return json.loads(process.out.read_text())


def calls(tmp_path):
    return [line.split() for line in (tmp_path / "calls.txt").read_text().splitlines()]


def trials_by_state(results, url):
    study = json.loads((results / MARKER_NAME).read_text())["study"]
    trials = optuna.load_study(study_name=study, storage=storage_with_driver(url)).trials
    by_state = {}
    for trial in trials:
        by_state.setdefault(trial.state.name, []).append(trial)
    return by_state


def metrics(results):
    return {
        f"{run.parent.name}/{run.name}": json.loads((run / "metrics.json").read_text())
        for run in sorted(results.glob("*/seed_*"))
        if run.is_dir() and "." not in run.name
    }


@pytest.fixture
def configs(tmp_path):
    paths = [tmp_path / "configs" / f"sick_e_bow_{mode}.jsonnet" for mode in ("fe", "ft")]
    paths[0].parent.mkdir()
    for path in paths:
        path.write_text(GRID_CONFIG)
    return paths


@pytest.mark.parametrize(
    "database, count, seeds",
    [("sqlite", 2, (1, 2)), ("postgresql", 2, (1, 2)), ("postgresql", 4, (1, 2, 3, 4))],
)
def test_workers_train_every_run_of_the_grid_once(
    tmp_path, configs, forked, request, database, count, seeds
):
    url = (
        f"sqlite:///{tmp_path / 'workers.db'}"
        if database == "sqlite"
        else request.getfixturevalue("postgres_url")
    )
    workers = start_workers(forked, tmp_path, configs, url, count=count, seeds=seeds)
    done = [finish(worker) for worker in workers]
    pids = {str(worker.pid) for worker in workers}

    trained = calls(tmp_path)
    runs = sorted(run for _, run in trained)
    assert runs == sorted(f"sick_e_bow_{m}/seed_{s}" for m in ("fe", "ft") for s in seeds)
    assert {pid for pid, _ in trained} == pids  # every worker took part
    assert sum(result["trained"] for result in done) == len(runs)
    results = tmp_path / "results"
    for pid, run in trained:
        info = json.loads((results / run / "tune_run.json").read_text())
        assert info["status"] == "ok" and info["worker"].endswith(f":{pid}")
    assert not list(results.glob("*/seed_*.*"))  # nothing moved aside
    by_state = trials_by_state(results, url)
    assert len(by_state["COMPLETE"]) == len(runs) and "FAIL" not in by_state
    assert {trial.user_attrs["run"] for trial in by_state["COMPLETE"]} == set(runs)
    assert "secret" not in (results / MARKER_NAME).read_text()  # a password is never written
    assert not (results / ".feature_cache").exists()  # the last worker out removed it

    # Workers started again on the finished grid train nothing.
    again = FakeTraining()
    result = run_grid(
        configs,
        list(seeds),
        results,
        runner=again,
        predict=None,
        plan=False,
        progress=False,
        coordinator=Coordinator(url),
    )
    assert again.calls == [] and result.trained == []


def claim_many(url, lock_dir, start, count, out) -> None:
    """A forked process: from `start` on, claims `count` trials of study "s" with
    `claim_trial`, and writes their numbers to `out`."""
    try:
        study = optuna.load_study(study_name="s", storage=Coordinator(url).open_storage()[0])
        while time.time() < start:
            time.sleep(0.001)
        numbers = [claim_trial(study, lock_dir).number for _ in range(count)]
        Path(out).write_text(json.dumps(numbers))
    except BaseException:
        Path(out).write_text(traceback.format_exc())
        os._exit(1)
    os._exit(0)


def test_processes_claiming_together_on_sqlite_never_get_the_same_trial(tmp_path, forked):
    """Three processes each claim 30 of 100 enqueued trials at once from one SQLite study.
    Optuna's own `ask()` gives some trials twice there (3 to 7 of 90 in three tries, since
    SQLite ignores `SELECT ... FOR UPDATE`); `claim_trial` never does."""
    url = f"sqlite:///{tmp_path / 'claims.db'}"
    study = optuna.create_study(study_name="s", storage=url)
    for number in range(100):
        study.enqueue_trial({}, user_attrs={"run": number})
    start = time.time() + 2  # every process has loaded the study by then
    context = multiprocessing.get_context("fork")
    outs = [tmp_path / f"claims_{index}.json" for index in range(3)]
    for out in outs:
        process = context.Process(target=claim_many, args=(url, tmp_path, start, 30, out))
        process.start()
        process.out = out
        forked.append(process)
    claimed = [number for process in forked for number in finish(process, timeout=120)]
    assert len(claimed) == 90 and len(set(claimed)) == 90
    running = study.get_trials(states=[optuna.trial.TrialState.RUNNING])
    assert sorted(trial.number for trial in running) == sorted(claimed)


def test_a_killed_worker_s_run_is_trained_again_by_another(tmp_path, configs, forked):
    """kill -9 of a worker mid-run: after the grace period (3 s) the other worker trains that
    run from scratch; the results equal one uninterrupted worker's."""
    url = f"sqlite:///{tmp_path / 'workers.db'}"
    stalled, survivor = start_workers(forked, tmp_path, configs, url, stall_first=True)
    deadline = time.monotonic() + 120
    while not any(pid == str(stalled.pid) for pid, _ in calls_so_far(tmp_path)):
        assert time.monotonic() < deadline and stalled.is_alive()
        time.sleep(0.1)
    [lost] = [run for pid, run in calls_so_far(tmp_path) if pid == str(stalled.pid)]
    while not (tmp_path / "results" / lost / "config.json").exists():  # its child trains
        assert time.monotonic() < deadline
        time.sleep(0.1)
    os.kill(stalled.pid, signal.SIGKILL)
    stalled.join()
    done = finish(survivor)

    trained = calls(tmp_path)
    assert [run for pid, run in trained if pid == str(survivor.pid)].count(lost) == 1
    assert sorted(run for _, run in trained).count(lost) == 2  # the killed attempt and the rerun
    assert done["trained"] == 4
    results = tmp_path / "results"
    [aside] = (results / lost).parent.glob(f"{Path(lost).name}.incomplete-*")
    assert (aside / "config.json").is_file() and not (aside / "metrics.json").exists()
    info = json.loads((results / lost / "tune_run.json").read_text())
    assert info["status"] == "ok" and info["worker"].endswith(f":{survivor.pid}")
    by_state = trials_by_state(results, url)
    assert len(by_state["COMPLETE"]) == 4 and len(by_state["FAIL"]) == 1
    assert by_state["FAIL"][0].user_attrs["run"] == lost

    # One worker alone, never interrupted, gets the same results.
    alone = tmp_path / "alone"
    runner = ChildTraining(tmp_path / "alone_calls.txt")
    run_grid(configs, [1, 2], alone, runner=runner, predict=None, plan=False, progress=False)
    assert metrics(results) == metrics(alone) and len(metrics(alone)) == 4


def calls_so_far(tmp_path):
    path = tmp_path / "calls.txt"
    return calls(tmp_path) if path.exists() else []


def test_other_grids_and_plain_grids_are_refused_on_a_workers_folder(tmp_path, configs, capsys):
    results = tmp_path / "results"
    url = f"sqlite:///{tmp_path / 'workers.db'}"
    options = {"predict": None, "plan": False, "progress": False}
    first = FakeTraining()
    run_grid(configs, [1], results, runner=first, coordinator=Coordinator(url), **options)
    assert len(first.calls) == 2

    other = FakeTraining()
    with pytest.raises(ConfigurationError) as refused:
        run_grid(configs, [1, 2], results, runner=other, coordinator=Coordinator(url), **options)
    message = str(refused.value)
    assert "belongs to workers of another grid" in message
    assert "runs only in this command: sick_e_bow_fe/seed_2, sick_e_bow_ft/seed_2" in message
    with pytest.raises(ConfigurationError, match="--ext-var TUNE_LR: \\(unset\\) there, 1e-3"):
        run_grid(
            configs,
            [1],
            results,
            ext_vars={"TUNE_LR": "1e-3"},
            runner=other,
            coordinator=Coordinator(url),
            **options,
        )
    # The device is each worker's own.
    run_grid(
        configs,
        [1],
        results,
        ext_vars={"TUNE_CUDA_DEVICE": "-1"},
        runner=other,
        coordinator=Coordinator(url),
        **options,
    )
    with pytest.raises(ConfigurationError, match="belongs to workers sharing one grid"):
        run_grid(configs, [1], results, runner=other, **options)
    assert other.calls == []

    # Through the command line: one line naming the fix, exit code 2.
    argv = [*configs, "--seeds", 1, "--results-dir", results, "--no-progress", "--no-plan"]
    with pytest.raises(SystemExit) as exit_info:
        run_cli(add_grid_parser, argv)
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert error.startswith("allennlp tune-grid: ") and f"--coordinator {url}" in error
    with pytest.raises(SystemExit):
        run_cli(add_grid_parser, [*argv, "--heartbeat", 5])
    assert "--heartbeat and --grace need --coordinator" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run_cli(add_grid_parser, [*argv, "--coordinator", "workers.db"])
    assert "--coordinator 'workers.db' is not a database URL" in capsys.readouterr().err
    # tune-compare --sequential picks each round's runs: no fixed grid to share (--budget's
    # searches and seeds are shared: test_budget_workers).
    compare = ["sick_e", "--encoder", "bert-base-uncased", "--results-dir", tmp_path / "c"]
    with pytest.raises(SystemExit):
        run_cli(add_compare_parser, [*compare, "--sequential", "--coordinator", url])
    error = capsys.readouterr().err
    assert "--sequential and --coordinator do not go together: workers share one grid" in error
    assert "chooses each round's seed runs from the looks after the last round" in error


def test_two_tune_grid_commands_share_a_real_grid(tmp_path, tiny_config, tiny_ext_vars):
    """`allennlp tune-grid --coordinator` twice, real training of the tiny fixture config."""
    url = f"sqlite:///{tmp_path / 'workers.db'}"
    results = tmp_path / "results"
    code = "import allennlp_tune.commands.tune_grid; from allennlp.commands import main; main()"
    command = [sys.executable, "-c", code, "tune-grid", str(tiny_config), "--seeds", "1", "2"]
    command += ["--results-dir", str(results), "--coordinator", url, "--heartbeat", "2"]
    command += ["--no-progress", "--no-plan"]
    command += [f"--ext-var={key}={value}" for key, value in tiny_ext_vars.items()]
    workers = [
        subprocess.Popen(
            command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outputs = [worker.communicate(timeout=600) for worker in workers]
    for worker, (out, err) in zip(workers, outputs):
        assert worker.returncode == 0, err[-3000:]
        assert "| SST-2 | accuracy |" in out and "(n=2)" in out  # each prints the whole grid
    pids = {str(worker.pid) for worker in workers}
    for seed in (1, 2):
        info = json.loads((results / "sst2_bow_fe" / f"seed_{seed}" / "tune_run.json").read_text())
        assert info["status"] == "ok" and info["worker"].rpartition(":")[2] in pids
    assert not list(results.glob("sst2_bow_fe/seed_*.*"))  # nothing was trained twice
    by_state = trials_by_state(results, url)
    assert len(by_state["COMPLETE"]) == 2 and "FAIL" not in by_state
