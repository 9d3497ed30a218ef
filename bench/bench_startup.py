"""
Start-up time of the plugin's subcommands against `python -c "import torch"`, in one run.

It runs, `--repeat` times in turn, `python -c "import torch"` and each of `allennlp tune-report
--help` and `allennlp tune-compare --help` (the venv's console script), each in a fresh process
from a temporary working folder with an empty HOME, and prints per command the median wall
time, the median of the per-round ratios command / torch (each round's processes ran one after
the other, so under the same load), the peak RSS (the child's `ru_maxrss`) and how many lines it
wrote to stderr. The target is a ratio of at most 2.5. Ratios, not seconds: on a machine shared
with other jobs the seconds vary by 2x from run to run, the ratio much less.

    .venv/bin/python bench/bench_startup.py [--repeat 7] [--no-plugins-file]

The working folder holds a `.allennlp_plugins` naming `allennlp_tune` unless `--no-plugins-file`
is given: a plugin that is not discovered without the file (an older checkout, run through
`PYTHONPATH=<checkout>`, which also supplies that checkout's `allennlp_tune_preimport` to the
start-up hook) is then measured on the same path as the current one. PYTHONPATH is passed on.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Tuple

BASELINE = "import torch"
COMMANDS = ("tune-report", "tune-compare")
TARGET = 2.5


def run_once(command: List[str], cwd: Path, env: Dict[str, str]) -> Tuple[float, int, int, int]:
    """Wall seconds, peak RSS in MiB, exit status and stderr line count of one process."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=err)
        _pid, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        lines = len(err.read().decode(errors="replace").splitlines())
    return wall, usage.ru_maxrss // 1024, process.returncode, lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7, help="rounds (default 7)")
    parser.add_argument(
        "--no-plugins-file",
        action="store_true",
        help="no .allennlp_plugins in the working folder (the plugin must be found as installed)",
    )
    args = parser.parse_args()

    python = Path(sys.executable)
    allennlp = python.with_name("allennlp")
    runs = {"python -c 'import torch'": [str(python), "-c", BASELINE]}
    for name in COMMANDS:
        runs[f"allennlp {name} --help"] = [str(allennlp), name, "--help"]

    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder) / "work"
        home = Path(folder) / "home"
        work.mkdir()
        home.mkdir()
        if not args.no_plugins_file:
            (work / ".allennlp_plugins").write_text("allennlp_tune\n")
        env = dict(os.environ, HOME=str(home), HF_HUB_OFFLINE="1")
        results: Dict[str, List[Tuple[float, int, int, int]]] = {label: [] for label in runs}
        for _round in range(args.repeat):
            for label, command in runs.items():
                results[label].append(run_once(command, work, env))

    torch_times = [wall for wall, _rss, _rc, _lines in results[f"python -c '{BASELINE}'"]]
    print(
        f"{args.repeat} rounds, PYTHONPATH={os.environ.get('PYTHONPATH', '')!r}, "
        f"plugins file: {not args.no_plugins_file}, load average {os.getloadavg()[0]:.1f}"
    )
    print(f"{'command':34} {'median s':>9} {'ratio':>6} {'peak MiB':>9} {'stderr':>7} {'rc':>4}")
    worst = 0.0
    for label, rows in results.items():
        walls = [wall for wall, _rss, _rc, _lines in rows]
        ratios = [wall / base for wall, base in zip(walls, torch_times)]
        ratio = statistics.median(ratios)
        if label != f"python -c '{BASELINE}'":
            worst = max(worst, ratio)
        codes = sorted({rc for _wall, _rss, rc, _lines in rows})
        print(
            f"{label:34} {statistics.median(walls):9.2f} {ratio:6.2f} "
            f"{max(rss for _w, rss, _rc, _l in rows):9d} "
            f"{max(lines for _w, _rss, _rc, lines in rows):7d} {','.join(map(str, codes)):>4}"
        )
    print(f"target: ratio <= {TARGET}: {'met' if worst <= TARGET else 'NOT met'} ({worst:.2f})")
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
