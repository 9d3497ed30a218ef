"""
One writer per results directory: a grid's training child dies with the grid, a rerun refuses
while any process still holds the grid's lock, and a grid run never restores a checkpoint it did
not write (issue #21: after `kill -9` of tune-grid, its orphaned `allennlp train` wrote
checkpoints by path into the rerun's directory, which restored them).
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Optional

import pytest
from allennlp.common.checks import ConfigurationError
from allennlp.training.checkpointer import Checkpointer

from allennlp_tune.data.paths import REPO_ROOT
from allennlp_tune.experiments.grid import run_grid
from allennlp_tune.experiments.process import train_subprocess
from allennlp_tune.training import fresh_run


def children_of(pid: int) -> List[int]:
    children: List[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            pass
    return children


def is_running(pid: int) -> bool:
    """
    Some thread of the process has not exited. A killed process's main thread turns zombie
    before its other threads are gone (and they hold its files), and an exited orphan may wait
    a while for init to reap it.
    """
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            if (task / "stat").read_text().rpartition(")")[2].split()[0] != "Z":
                return True
        except OSError:
            pass
    return False


def wait_for(predicate, timeout: float, what: str, process: Optional[subprocess.Popen] = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if process is not None and process.poll() is not None:
            raise AssertionError(f"tune-grid exited ({process.returncode}) before {what}")
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux's")
def test_kill_9_of_the_grid_kills_its_training_child_and_the_rerun_trains_cleanly(
    tmp_path, tiny_config, tiny_ext_vars
):
    results = tmp_path / "results"
    run_dir = results / "sst2_bow_fe" / "seed_1"
    long_run = {**tiny_ext_vars, "TUNE_EPOCHS": "10000"}
    command = [sys.executable, "-m", "allennlp", "tune-grid", str(tiny_config), "--seeds", "1"]
    command += ["--results-dir", str(results), "--no-progress"]
    command += [f"--ext-var={key}={value}" for key, value in long_run.items()]
    with open(tmp_path / "grid.out", "w") as out:
        grid_process = subprocess.Popen(
            command, cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    child = None
    try:
        # Training: the child has written its first epoch's checkpoint into the run directory.
        wait_for(lambda: list(run_dir.glob("model_state_e*.th")), 180, "a checkpoint", grid_process)
        [child] = children_of(grid_process.pid)
        os.kill(grid_process.pid, signal.SIGKILL)
        grid_process.wait(timeout=10)
        wait_for(lambda: not is_running(child), 5, f"the training child {child} to die")
    finally:
        for pid in [grid_process.pid] + ([child] if child else []):
            if is_running(pid):
                os.kill(pid, signal.SIGKILL)
        grid_process.wait(timeout=10)

    killed_files = sorted(path.name for path in run_dir.iterdir())
    result = run_grid([tiny_config], [1], results, ext_vars=tiny_ext_vars, progress=False)
    assert result.trained == [run_dir] and not result.failed
    [aside] = result.moved_aside
    assert aside.name.startswith("seed_1.incomplete-")
    # The killed attempt keeps everything but its weights (checkpoints, best.th: only disk once
    # it is aside), and nobody writes into it or into the rerun any more.
    weights = [name for name in killed_files if name.endswith(".th")]
    assert weights and "config.json" in killed_files
    kept = sorted(set(killed_files) - set(weights) | {"tune_train.log"})
    assert sorted(path.name for path in aside.iterdir()) == kept
    metrics = (run_dir / "metrics.json").read_text()
    assert '"epoch": 1' in metrics  # the rerun's own 2 epochs, not the killed run's 10000
    time.sleep(2)
    assert (run_dir / "metrics.json").read_text() == metrics
    assert sorted(path.name for path in aside.iterdir()) == kept


def test_a_rerun_refuses_while_a_live_process_holds_the_results_directory(tmp_path, tiny_config):
    """A process that outlived its grid (here a daemonized `sleep`) still holds the lock."""
    results = tmp_path / "results"
    pid_file = tmp_path / "writer.pid"

    def daemonizing_training(command, environment, log_path):
        # The training child leaves a grandchild behind, which inherits the grid's lock, as a
        # killed grid's child would.
        script = f"sleep 60 >/dev/null 2>&1 & echo $! > {pid_file}; exit 3"
        return train_subprocess(["sh", "-c", script], environment, log_path)

    result = run_grid([tiny_config], [1], results, runner=daemonizing_training, progress=False)
    writer = int(pid_file.read_text())
    try:
        assert len(result.failed) == 1 and is_running(writer)
        before = sorted(path.name for path in (results / "sst2_bow_fe").iterdir())
        with pytest.raises(ConfigurationError) as refused:
            run_grid([tiny_config], [1], results, runner=daemonizing_training, progress=False)
        message = str(refused.value)
        assert str(results / ".tune_grid.lock") in message and "locked by a live process" in message
        assert "kill" in message
        # Nothing was moved aside or started while the writer lives.
        assert sorted(path.name for path in (results / "sst2_bow_fe").iterdir()) == before
    finally:
        os.kill(writer, signal.SIGKILL)
    wait_for(lambda: not is_running(writer), 5, "the writer to die")

    calls = []

    def quick_failure(command, environment, log_path):
        calls.append(command)
        return 1

    result = run_grid([tiny_config], [1], results, runner=quick_failure, progress=False)
    assert len(calls) == 1 and result.moved_aside[0].name.startswith("seed_1.failed-")


def test_the_grid_cli_names_the_lock_holder(tmp_path, tiny_config, capsys):
    """tune-grid ends with one line, not a traceback, while another grid holds the directory."""
    from allennlp_tune.commands.tune_grid import add_grid_parser
    from tests.results.test_grid import run_cli

    results = tmp_path / "results"
    results.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1], 'a'); "
         "fcntl.flock(f, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(60)",
         str(results / ".tune_grid.lock")],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline() == "locked\n"
        with pytest.raises(SystemExit) as exit_info:
            run_cli(add_grid_parser, [tiny_config, "--results-dir", results, "--no-progress"])
        assert exit_info.value.code == 2
        # The plan of the cells comes first (stderr), then the one line of the refusal.
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert last.startswith("allennlp tune-grid: ") and "locked by a live process" in last
    finally:
        holder.kill()
        holder.wait()


def test_a_grid_run_does_not_restore_a_checkpoint_it_did_not_write(
    tmp_path, monkeypatch, tiny_config, tiny_ext_vars
):
    """
    A real trainer in a process started as a grid run (TUNE_GRID_FRESH_RUN=1, which the plugin
    reads when imported) refuses the checkpoints in its directory. `--recover` here stands for
    a checkpoint that another process wrote into a fresh run's directory.
    """
    from allennlp.commands import main as allennlp_main

    for key, value in {**tiny_ext_vars, "TUNE_SEED": "1", "TUNE_EPOCHS": "1"}.items():
        monkeypatch.setenv(key, value)
    out = tmp_path / "out"
    argv = ["allennlp", "train", str(tiny_config), "-s", str(out), "--include-package"]
    monkeypatch.setattr(sys, "argv", [*argv, "allennlp_tune"])
    allennlp_main(prog="allennlp")
    assert (out / "model_state_e1_b0.th").is_file()

    monkeypatch.setattr(Checkpointer, "load_checkpoint", Checkpointer.load_checkpoint)
    fresh_run.refuse_foreign_checkpoints({})  # not a grid run: nothing changes
    assert Checkpointer.load_checkpoint is not fresh_run._refuse_foreign_checkpoint
    fresh_run.refuse_foreign_checkpoints({fresh_run.FRESH_RUN_ENV: "1"})
    monkeypatch.setattr(sys, "argv", [*argv, "allennlp_tune", "--recover"])
    with pytest.raises(ConfigurationError, match="model_state_e1_b0.th is in the serialization"):
        allennlp_main(prog="allennlp")
    assert Checkpointer(tmp_path / "empty").load_checkpoint() is None


def test_importing_the_plugin_in_a_grid_run_installs_the_guard():
    """What `allennlp train --include-package allennlp_tune` does in a grid's child process."""
    code = (
        "import allennlp_tune; from allennlp.training.checkpointer import Checkpointer; "
        "print(Checkpointer.load_checkpoint.__name__)"
    )
    names = []
    for fresh in ("1", ""):
        env = {**os.environ, "TUNE_GRID_FRESH_RUN": fresh}
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-2000:]
        names.append(done.stdout.split()[-1])
    assert names == ["_refuse_foreign_checkpoint", "load_checkpoint"]
