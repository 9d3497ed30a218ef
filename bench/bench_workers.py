"""
What sharing a grid between workers (`--coordinator`, `allennlp_tune.experiments.workers`)
costs and gains on one machine: a grid of 16 short runs trained by one plain grid (no
coordinator), by 1 worker and by 2 workers, each on a fresh results folder and a fresh SQLite
coordinator (or `--postgres URL`: a fresh study per measurement there).

Every run is a stand-in training of `--run-s` seconds (default 2): a child process started by
the grid's own `train_subprocess` that writes what `allennlp train` writes (config, metrics,
archive), so the measurement is the grid and its coordination, not a model. `--real` trains the
tiny fixture config instead (`tests/results/fixtures/sst2_bow_fe.jsonnet`, seeds 1 to 16,
dev predictions off), which adds AllenNLP's start-up to every run.

It prints per setting the wall time, the speed-up over the plain grid, and the scheduling
overhead per run, (wall of 1 worker - wall of the plain grid) / runs; and, timed on its own,
the coordinator's round trips per run: claim (`fail_stale_trials`, the open trials, `ask`, the
first heartbeat) and record (`set_user_attr`, `tell`) on a study of 16 enqueued runs.

    .venv/bin/python bench/bench_workers.py [--runs 16] [--run-s 2] [--workers 1 2]
        [--postgres postgresql://user:password@host/db] [--real]

Run it on a quiet machine: on a shared 2-core one, two workers compete with everything else for
the CPU and the speed-up says little.
"""

import argparse
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# A config as the stand-in training reads it: its seed and metric.
STAND_IN_CONFIG = """{
  random_seed: std.parseInt(std.extVar("TUNE_SEED")),
  trainer: {validation_metric: "+accuracy"},
}"""
CHILD = r"""
import json, sys, time
from pathlib import Path
run_dir, seed, pause, config = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
run_dir.mkdir(parents=True)
(run_dir / "config.json").write_text(config)
time.sleep(pause)
(run_dir / "metrics.json").write_text(json.dumps({"best_validation_accuracy": 0.5 + seed / 100}))
(run_dir / "model.tar.gz").write_bytes(b"")
"""


class StandIn:
    """A training of `pause` seconds in a child process (`CHILD`)."""

    def __init__(self, pause: float) -> None:
        self.pause = pause

    def __call__(self, command, environment, log_path):
        from allennlp_tune.experiments.process import train_subprocess
        from allennlp_tune.planning.plan import render_config

        run_dir = Path(command[command.index("-s") + 1])
        config = render_config(Path(command[command.index("train") + 1]), environment, None)
        child = [sys.executable, "-c", CHILD, str(run_dir), environment["TUNE_SEED"]]
        child += [str(self.pause), json.dumps(config)]
        return train_subprocess(child, environment, log_path)


def grid_args(args: argparse.Namespace, folder: Path):
    """The configs, seeds and ext vars of the benchmark's grid."""
    if args.real:
        from tests.results.conftest import TINY_CONFIG, TINY_EXT_VARS

        return [TINY_CONFIG], list(range(1, args.runs + 1)), dict(TINY_EXT_VARS)
    configs = []
    for index in range(4):
        path = folder / "configs" / f"sick_e_bow{index}_fe.jsonnet"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(STAND_IN_CONFIG)
        configs.append(path)
    return configs, list(range(1, args.runs // 4 + 1)), {}


def one_grid(args, folder: Path, coordinator_url: Optional[str]) -> None:
    from allennlp_tune.experiments.grid import run_grid
    from allennlp_tune.experiments.workers import Coordinator

    configs, seeds, ext_vars = grid_args(args, folder)
    runner = {} if args.real else {"runner": StandIn(args.run_s)}
    run_grid(
        configs,
        seeds,
        folder / "results",
        ext_vars=ext_vars,
        **runner,
        predict=None,
        plan=False,
        progress=False,
        coordinator=Coordinator(coordinator_url) if coordinator_url else None,
    )


def _worker(args, folder: Path, url: str) -> None:
    try:
        one_grid(args, folder, url)
    except BaseException:
        import traceback

        traceback.print_exc()
        os._exit(1)
    os._exit(0)


def timed(args, workers: int, url: Optional[str]) -> float:
    """Wall seconds of the grid with `workers` worker processes (0: a plain grid)."""
    folder = Path(tempfile.mkdtemp(prefix="bench-workers-"))
    try:
        started = time.perf_counter()
        if workers == 0:
            one_grid(args, folder, None)
        else:
            context = multiprocessing.get_context("fork")
            processes = [
                context.Process(target=_worker, args=(args, folder, url)) for _ in range(workers)
            ]
            for process in processes:
                process.start()
            for process in processes:
                process.join()
                if process.exitcode != 0:
                    raise SystemExit(f"a worker failed (exit {process.exitcode})")
        wall = time.perf_counter() - started
        done = len(list((folder / "results").glob("*/seed_*/tune_run.json")))
        if done != args.runs:
            raise SystemExit(f"{done} runs recorded, expected {args.runs}")
        return wall
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def round_trips(url: str, runs: int) -> Dict[str, float]:
    """Milliseconds per run of the coordinator's claim and record, timed alone."""
    import optuna
    from optuna.storages import fail_stale_trials

    from allennlp_tune.experiments.workers import (
        RUN_ATTR,
        Coordinator,
        _open_trials,
        _optuna_quiet,
    )

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage, _ = Coordinator(url).open_storage()
    study = optuna.create_study(storage=storage, study_name=f"bench-{time.time_ns()}")
    for index in range(runs):
        study.enqueue_trial({}, user_attrs={RUN_ATTR: f"run/seed_{index}"})
    claim = record = 0.0
    with _optuna_quiet():
        for _ in range(runs):
            started = time.perf_counter()
            fail_stale_trials(study)
            _open_trials(study)
            trial = study.ask()
            storage.record_heartbeat(trial._trial_id)
            claim += time.perf_counter() - started
            started = time.perf_counter()
            trial.set_user_attr("status", "ok")
            study.tell(trial, 1.0)
            record += time.perf_counter() - started
    return {"claim_ms": 1000 * claim / runs, "record_ms": 1000 * record / runs}


def sqlite_url() -> str:
    return f"sqlite:///{tempfile.mkdtemp(prefix='bench-workers-db-')}/workers.db"


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=16, help="runs in the grid (a multiple of 4)")
    parser.add_argument("--run-s", type=float, default=2.0, help="seconds per stand-in run")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--postgres", metavar="URL", default=None)
    parser.add_argument("--real", action="store_true", help="train the tiny fixture config")
    args = parser.parse_args(argv)
    if args.runs % 4:
        parser.error("--runs must be a multiple of 4")
    if args.postgres:
        from allennlp_tune.experiments.search import storage_with_driver

        args.postgres = storage_with_driver(args.postgres)

    def url() -> str:
        return args.postgres or sqlite_url()

    kind = "the tiny fixture config" if args.real else f"stand-in runs of {args.run_s} s"
    database = "PostgreSQL" if args.postgres else "SQLite"
    print(f"{args.runs} runs ({kind}); coordinator: {database}")
    plain = timed(args, 0, None)
    print("| setting | wall s | speed-up | overhead per run s |\n|---|---|---|---|")
    print(f"| plain grid (no coordinator) | {plain:.1f} | 1.00 | - |")
    for count in args.workers:
        wall = timed(args, count, url())
        overhead = f"{(wall - plain) / args.runs:.2f}" if count == 1 else "-"
        print(f"| {count} worker(s) | {wall:.1f} | {plain / wall:.2f} | {overhead} |")
    trips = round_trips(url(), args.runs)
    print(
        f"coordinator round trips per run: claim {trips['claim_ms']:.1f} ms, "
        f"record {trips['record_ms']:.1f} ms"
    )


if __name__ == "__main__":
    main()
