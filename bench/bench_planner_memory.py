"""
What the planner's process holds while its runs train: tune-compare and tune-grid time a few
batches of each cell in their own process (`planning.calibrate`), then start the training
children and wait beside them. This bench plans and times the cell of each run folder given (its
rendered `config.json`), in a fresh process each, and prints that process's resident set size
before the timing, right after it (what it held beside the runs before
`calibrate.release_host_memory`), and after the release (what it holds now), with its peak.

    .venv/bin/python bench/bench_planner_memory.py RUN_DIR [RUN_DIR ...]

A RUN_DIR is a finished (or started) run's folder, `<results>/<cell>/seed_<n>`. The timing
builds the cell's model and trains a few batches, so run it on an idle machine; the figures
are memory, not time, and do not depend on the load. Results: bench/README.md, "The planner's
own memory".
"""

import json
import multiprocessing
import sys
from pathlib import Path
from typing import Dict

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))


def _status_mb(key: str) -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError(f"no {key} in /proc/self/status (Linux only)")


def _measure(run_dir: str, queue) -> None:
    import allennlp_tune  # noqa: F401
    from allennlp_tune.planning import calibrate
    from allennlp_tune.planning.plan import plan_cell

    config = Path(run_dir) / "config.json"
    rendered = json.loads(config.read_text())
    plan = plan_cell(config, rendered=rendered)
    before = _status_mb("VmRSS")
    timed = calibrate.calibrate_cell(plan, rendered)
    held = _status_mb("VmRSS")
    calibrate.release_host_memory()
    queue.put(
        {
            "cell": Path(run_dir).parent.name,
            "timed": timed,
            "before": before,
            "held": held,
            "released": _status_mb("VmRSS"),
            "peak": _status_mb("VmHWM"),
        }
    )


def measure(run_dir: str) -> Dict[str, float]:
    """The figures of one run folder's cell, measured in a fresh (spawned) process."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=_measure, args=(run_dir, queue))
    child.start()
    result = queue.get()
    child.join()
    return result


def main() -> None:
    print("| cell | RSS before timing | after timing | after release | peak |")
    print("|---|---|---|---|---|")
    for run_dir in sys.argv[1:]:
        r = measure(run_dir)
        if not r["timed"]:
            print(f"| {r['cell']} | not timed (see the plan's notes) | | | |")
            continue
        print(
            f"| {r['cell']} | {r['before']:.0f} MB | {r['held']:.0f} MB | "
            f"{r['released']:.0f} MB | {r['peak']:.0f} MB |"
        )


if __name__ == "__main__":
    main()
