"""
`tune-compare --budget K --coordinator URL` (`allennlp_tune.experiments.budget_workers`): workers
share each mode's K search trials, then the seeds of every mode's best setting; and `--budget`
with `--sequential` in one process.

The trials and seeds train the tiny fixture BERT of test_budget in the workers' own processes
(spawned, so that no torch thread pool is forked), its seeds in process
(`test_budget.in_process_training`).
"""

import datetime
import json
import multiprocessing
import os
import sys
import time
import traceback
from pathlib import Path

import optuna
import pytest
from allennlp.common.checks import ConfigurationError
from optuna.trial import TrialState

sys.path.insert(0, str(Path(__file__).parent))
from test_budget import in_process_training, study_trials, written_configs  # noqa: E402
from test_compare import BERT, write_reviews  # noqa: E402

from allennlp_tune.experiments.budget_run import run_budget  # noqa: E402
from allennlp_tune.experiments.budget_workers import SLOT_ATTR, counted_trials  # noqa: E402
from allennlp_tune.experiments.compare import run_compare  # noqa: E402
from allennlp_tune.experiments.outputs import predict_in_process  # noqa: E402
from allennlp_tune.experiments.search import _Trials  # noqa: E402
from allennlp_tune.experiments.workers import MARKER_NAME, Coordinator  # noqa: E402
from allennlp_tune.reporting.sequential import SequentialPlan  # noqa: E402
from allennlp_tune.rundir.names import SEQUENTIAL_NAME  # noqa: E402

# The rate only, one epoch (the config's own ft rate, 2e-5, is trial 0 of ft).
SPACES = {"ft": ("TUNE_LR=1e-5:2e-4:log",), "bitfit": ("TUNE_LR=5e-5:5e-3:log",)}
EXT_VARS = {"TUNE_EPOCHS": "1"}


def compare(task, results, budget=2, modes=("ft", "bitfit"), seeds=(1,), **options):
    return run_compare(
        str(task),
        str(BERT),
        list(modes),
        list(seeds),
        results,
        budget=budget,
        spaces={mode: SPACES[mode] for mode in modes},
        ext_vars=EXT_VARS,
        runner=in_process_training,
        predict=predict_in_process,
        progress=False,
        **{"plan": False, **options},
    )


def budget_worker(spec) -> None:
    """A worker process: `compare` with the coordinator, after both workers have started;
    writes the runs it trained and skipped to `spec["out"]`, or its traceback."""
    try:
        barrier = Path(spec["barrier"])
        (barrier / str(os.getpid())).touch()
        while len(os.listdir(barrier)) < 2:
            time.sleep(0.05)
        # Each worker's first trial waits (60 s at most) until the other has claimed one too,
        # so that on a loaded machine one worker cannot take every slot before the other
        # starts, and "both workers trained trials" asserts the sharing, not the timing.
        claims = barrier.parent / "claims"
        claims.mkdir(exist_ok=True)
        objective = _Trials.__call__

        def claimed_by_both(self, trial):
            (claims / str(os.getpid())).touch()
            deadline = time.time() + 60
            while len(os.listdir(claims)) < 2 and time.time() < deadline:
                time.sleep(0.05)
            return objective(self, trial)

        _Trials.__call__ = claimed_by_both
        # No worker dies here: a grace long enough that a loaded machine's late heartbeat
        # never makes a live worker's trial stale (the dead-worker test has a short one).
        coordinator = Coordinator(spec["url"], heartbeat_s=1, grace_s=60)
        result = compare(Path(spec["task"]), Path(spec["results"]), coordinator=coordinator)
        done = {
            "trained": [f"{run.parent.name}/{run.name}" for run in result.trained],
            "skipped": [f"{run.parent.name}/{run.name}" for run in result.skipped],
        }
        Path(spec["out"]).write_text(json.dumps(done))
    except BaseException:
        Path(spec["out"]).write_text(traceback.format_exc())
        sys.exit(1)


def shared_studies(results: Path, url: str):
    prefix = json.loads((results / "search" / MARKER_NAME).read_text())["study"]
    return {
        mode: optuna.load_study(study_name=f"{prefix}-reviews_bertuncased_{mode}", storage=url)
        for mode in ("ft", "bitfit")
    }


def comparable(record, folder):
    """budget.json without what differs between processes (wall seconds, who trained) and
    with its folder's paths relative."""
    text = json.dumps(record).replace(str(folder), "RESULTS")
    record = json.loads(text)
    for mode in record["modes"]:
        mode.pop("seconds")
        mode.pop("trained_now")
    return record


def test_two_workers_share_the_searches_and_the_seeds(tmp_path):
    """Two workers, --budget 2, ft and bitfit, one seed: each study ends with exactly 2 counted
    trials, both workers take part, every seed run is trained once at its mode's best setting,
    and ft's search (its trials, its record in budget.json) equals one process's."""
    task = write_reviews(tmp_path / "task")
    results = tmp_path / "workers"
    url = f"sqlite:///{tmp_path / 'workers.db'}"
    (tmp_path / "barrier").mkdir()
    context = multiprocessing.get_context("spawn")
    workers = []
    for index in range(2):
        spec = {
            "barrier": str(tmp_path / "barrier"),
            "url": url,
            "task": str(task),
            "results": str(results),
            "out": str(tmp_path / f"worker_{index}.out"),
        }
        worker = context.Process(target=budget_worker, args=(spec,))
        worker.start()
        worker.out = Path(spec["out"])
        workers.append(worker)
    done = []
    for worker in workers:
        worker.join(300)
        assert worker.exitcode == 0, worker.out.read_text()[-3000:]
        done.append(json.loads(worker.out.read_text()))

    seeds = ["reviews_bertuncased_bitfit/seed_1", "reviews_bertuncased_ft/seed_1"]
    assert sorted(run for view in done for run in view["trained"]) == seeds  # each once
    pids = {str(worker.pid) for worker in workers}
    trial_workers = set()
    for mode, study in shared_studies(results, url).items():
        counted = counted_trials(study)
        assert len(counted) == 2 and all(t.state == TrialState.COMPLETE for t in counted), mode
        assert all(SLOT_ATTR in t.user_attrs or t.state == TrialState.FAIL for t in study.trials)
        trial_workers |= {t.user_attrs["worker"].rpartition(":")[2] for t in counted}
    assert trial_workers == pids  # both workers trained trials
    searched = max(
        t.datetime_complete for study in shared_studies(results, url).values() for t in study.trials
    ).replace(microsecond=0)
    for seed_run in seeds:
        info = json.loads((results / seed_run / "tune_run.json").read_text())
        assert info["status"] == "ok" and info["worker"].rpartition(":")[2] in pids
        # No seed started before the last trial of either search had finished.
        assert datetime.datetime.strptime(info["started"], "%Y%m%dT%H%M%S") >= searched
    assert not list(results.glob("*/seed_1.*"))  # nothing trained twice or moved aside

    # Each seed trained with its mode's best setting.
    record = json.loads((results / "budget.json").read_text())
    for mode in record["modes"]:
        config = json.loads(
            (results / f"reviews_bertuncased_{mode['mode']}" / "seed_1" / "config.json").read_text()
        )
        assert config["trainer"]["optimizer"]["lr"] == float(mode["setting"]["TUNE_LR"])
        assert config["trainer"]["num_epochs"] == 1

    # One process searching ft the same way draws the same trials and writes the same record.
    alone = tmp_path / "alone"
    [config] = written_configs(alone, ["ft"])
    ext_vars = {"TUNE_BERT_MODEL": str(BERT), **EXT_VARS}
    run_budget(
        {"ft": config}, 2, alone, "reviews", "bertuncased", "bert", ext_vars,
        spaces={"ft": SPACES["ft"]},
    )  # fmt: skip
    [single] = comparable(json.loads((alone / "budget.json").read_text()), alone)["modes"]
    assert comparable(record, results)["modes"][0] == single
    assert [t.params for t in study_trials(alone, "reviews_bertuncased_ft")] == [
        t.params for t in counted_trials(shared_studies(results, url)["ft"])
    ]


def test_a_worker_that_loses_the_last_slot_waits_for_it(monkeypatch):
    """Two workers see one slot waiting; the other takes it first, so this worker's ask() makes
    a trial of its own. This worker must wait until that slot ends, not go on to the seeds
    while the search's best setting can still change (seen in CI: a seed started a second
    before the last trial ended)."""
    from allennlp_tune.experiments import budget_workers

    study = optuna.create_study(direction="maximize")
    study.enqueue_trial({}, user_attrs={SLOT_ATTR: True})
    real_ask = study.ask
    events = []

    def ask_after_the_other_worker():
        events.append("other worker claims the slot")
        study.other = real_ask()  # the slot: RUNNING, held by the other worker
        return real_ask()  # what this worker gets: a trial that never counts

    def sleep(seconds):
        if not study.get_trials()[study.other.number].state.is_finished():
            events.append("other worker finishes the slot")
            study.tell(study.other, 0.8)

    monkeypatch.setattr(study, "ask", ask_after_the_other_worker)
    monkeypatch.setattr(budget_workers.time, "sleep", sleep)
    mode = budget_workers._Mode("ft", Path("ft.jsonnet"), ["TUNE_LR"], [])
    mode.study = study
    coordinator = Coordinator("sqlite://", heartbeat_s=1, grace_s=60)
    budget_workers._train_slots([mode], None, None, coordinator, Path("."), "tune-compare", 0.01)
    events.append("seeds")

    assert events == ["other worker claims the slot", "other worker finishes the slot", "seeds"]
    [slot] = counted_trials(study)
    assert slot.state == TrialState.COMPLETE and mode.trained == 0


def test_a_dead_worker_s_trial_is_trained_again(tmp_path):
    """A slot held by a worker that stopped beating (a trial left RUNNING): after the grace
    period the next worker fails it, trains its copy, and the mode ends with exactly K counted
    trials; --budget 1 after 2 is refused, and so is one process on the workers' folder."""
    [config] = written_configs(tmp_path, ["ft"])
    url = f"sqlite:///{tmp_path / 'workers.db'}"
    coordinator = Coordinator(url, heartbeat_s=1, grace_s=2)

    def search(budget, coordinator=coordinator):
        return run_budget(
            {"ft": config}, budget, tmp_path, "reviews", "bertuncased", "bert",
            {"TUNE_BERT_MODEL": str(BERT), **EXT_VARS}, spaces={"ft": SPACES["ft"]},
            coordinator=coordinator,
        )["ft"]  # fmt: skip

    search(1)
    study = shared_studies_of(tmp_path, url, "ft")
    # A second slot, claimed by a worker that then died after one heartbeat.
    study.enqueue_trial({}, user_attrs={SLOT_ATTR: True})
    storage = optuna.storages.RDBStorage(url, heartbeat_interval=1, grace_period=2)
    dead = optuna.load_study(study_name=study.study_name, storage=storage).ask()
    storage.record_heartbeat(dead._trial_id)

    found = search(2)
    assert found.trials == {"complete": 2, "pruned": 0, "failed": 0}
    study = shared_studies_of(tmp_path, url, "ft")
    counted = counted_trials(study)
    assert len(counted) == 2 and all(t.state == TrialState.COMPLETE for t in counted)
    [failed] = [t for t in study.trials if t.state == TrialState.FAIL]
    assert failed.number == dead.number and failed.number not in {t.number for t in counted}
    assert counted[-1].system_attrs["failed_trial"] == dead.number  # its copy, trained
    assert json.loads((tmp_path / "budget.json").read_text())["modes"][0]["trials"] == (
        found.trials
    )
    with pytest.raises(ConfigurationError, match="has 2 trials already, more than the budget"):
        search(1)
    with pytest.raises(ConfigurationError, match="belongs to workers sharing one grid"):
        search(2, coordinator=None)
    # A worker given another space is refused, naming it.
    with pytest.raises(ConfigurationError) as refused:
        run_budget(
            {"ft": config}, 2, tmp_path, "reviews", "bertuncased", "bert",
            {"TUNE_BERT_MODEL": str(BERT), **EXT_VARS}, spaces={"ft": ("TUNE_LR=1e-5:1e-4:log",)},
            coordinator=coordinator,
        )  # fmt: skip
    assert "runs only in this command: reviews_bertuncased_ft over TUNE_LR=1e-5:1e-4:log" in str(
        refused.value
    )


def shared_studies_of(results, url, mode):
    prefix = json.loads((results / "search" / MARKER_NAME).read_text())["study"]
    return optuna.load_study(study_name=f"{prefix}-reviews_bertuncased_{mode}", storage=url)


def test_budget_then_sequential_rounds_at_each_best(tmp_path, capsys):
    """--budget 1 and --sequential (one look of 2 seeds) in one process: the searches, each
    mode's one trial kept as its seed 1, then the rounds' seed 2 at each mode's best setting,
    one plan for the round's modes, and sequential.json."""
    task = write_reviews(tmp_path / "task")
    results = tmp_path / "out"
    result = compare(
        task, results, budget=1, seeds=(1, 2), sequential=SequentialPlan(looks=(2,)),
        plan=True, calibrate=False,
    )  # fmt: skip
    assert len(result.trained) == 2 and not result.failed
    assert {path.name for path in result.trained} == {"seed_2"}
    err = capsys.readouterr().err
    # The whole decision's plan, then one plan of the round: both modes, one estimated total.
    assert err.count("plan of the whole decision (--budget 1)") == 1
    assert err.count("plan of the 2 cell(s) with runs to do") == 1, err
    assert err.count("Estimated total:") == 2
    budget = {m["mode"]: m for m in json.loads((results / "budget.json").read_text())["modes"]}
    for mode in ("ft", "bitfit"):
        assert sum(budget[mode]["trials"].values()) == 1
        for seed in (1, 2):
            info = json.loads(
                (
                    results / f"reviews_bertuncased_{mode}" / f"seed_{seed}" / "tune_run.json"
                ).read_text()
            )
            for key, value in budget[mode]["setting"].items():
                assert info["ext_vars"][key] == value
            assert ("kept_from_trial" in info) == (seed == 1)
    saved = json.loads((results / SEQUENTIAL_NAME).read_text())
    [pair] = saved["pairs"]
    assert {pair["mode_a"], pair["mode_b"]} == {"ft", "bitfit"} and pair["looks"]
    assert saved["seeds_trained"] == {"ft": 2, "bitfit": 2}
