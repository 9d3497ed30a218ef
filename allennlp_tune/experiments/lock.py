"""
One writer per results directory. A grid holds an exclusive `flock` on
`DIR/.tune_grid.lock` while it runs, and every training child inherits the locked descriptor
(`LOCK_FD_ENV` names it in the child's environment; `process.train_subprocess` keeps it open
there), so the directory is free only once both are gone. A second grid on the same directory,
or a rerun while the child of a killed grid still trains, is refused with the pids holding the
lock: the lock file records who holds it, for that message (the flock itself is the lock).

Where workers share a folder (`allennlp_tune.experiments.workers`), each worker holds the same
file with a *shared* flock instead (`ResultsDirLock(..., shared=True)`): workers do not exclude
each other, and a one-machine grid, which wants the exclusive lock, is refused while any worker
lives (and a worker while a one-machine grid runs). The exclusion then moves to the run: a
worker holds an exclusive flock on `DIR/<config_stem>/.seed_<k>.lock` (`RunLock`) while it
trains that run, and its training child inherits it as it inherits the directory's lock.
"""

import fcntl
import json
import os
from pathlib import Path
from typing import Dict, Optional

from allennlp.common.checks import ConfigurationError

from allennlp_tune.rundir import timestamp

LOCK_NAME = ".tune_grid.lock"
# The inherited descriptor of the lock, in the environment of a training child (as systemd's
# LISTEN_FDS names passed sockets): `train_subprocess` keeps it open in the child.
LOCK_FD_ENV = "TUNE_GRID_LOCK_FD"


def _is_alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie has exited and only waits to be reaped; but a killed process's main thread turns
    # zombie before its other threads (which hold its files) are gone.
    tasks = Path(f"/proc/{pid}/task")
    if not tasks.is_dir():
        return True
    for task in tasks.iterdir():
        try:
            if (task / "stat").read_text().rpartition(")")[2].split()[0] != "Z":
                return True
        except (OSError, IndexError):
            continue
    return False


def _read_lock_holder(fd: int) -> Dict[str, object]:
    try:
        loaded = json.loads(os.pread(fd, 1 << 16, 0).decode("utf-8"))
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def record_lock_holder(fd: int, **holder: object) -> None:
    """Who holds the lock, for the message of a refused grid (the flock itself is the lock)."""
    text = json.dumps({**_read_lock_holder(fd), **holder}, sort_keys=True).encode("utf-8")
    os.ftruncate(fd, 0)
    os.pwrite(fd, text + b"\n", 0)


class ResultsDirLock:
    """
    An exclusive, non-blocking `flock` on `RESULTS_DIR/.tune_grid.lock`. The training children
    inherit the locked descriptor, and a flock lasts until every process holding it has closed
    it or died: so it also stays taken while an orphaned child trains on, and needs no stale-pid
    guessing once everyone is gone.

    # Parameters

    results_dir : `Path`
        The grid's results directory.
    shared : `bool`, optional (default = `False`)
        Take a shared flock: the lock of a worker of a grid shared by many processes
        (`workers`), which only a one-machine grid's exclusive lock conflicts with. A shared
        holder does not record itself in the file (several hold it at once).
    """

    def __init__(self, results_dir: Path, shared: bool = False) -> None:
        self.path = results_dir / LOCK_NAME
        self.shared = shared
        self.fd: Optional[int] = None

    def __enter__(self) -> "ResultsDirLock":
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_lock_holder(fd)
            os.close(fd)
            raise ConfigurationError(self._refusal(holder)) from None
        self.fd = fd
        if not self.shared:
            record_lock_holder(fd, tune_grid_pid=os.getpid(), started=timestamp())
        return self

    def __exit__(self, *exc_info) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def _refusal(self, holder: Dict[str, object]) -> str:
        who = []
        for key, label in (("tune_grid_pid", "tune-grid"), ("child_pid", "its training child")):
            if key in holder:
                state = "running" if _is_alive(holder[key]) else "exited"
                who.append(f"{label} pid {holder[key]} ({state})")
        if holder.get("child_log"):
            who.append(f"last log {holder['child_log']}")
        held_by = f" ({', '.join(who)})" if who else ""
        if self.shared:
            return (
                f"{self.path.parent} is in use: {self.path} is locked by a one-machine "
                f"tune-grid or tune-compare (no --coordinator){held_by}, which workers cannot "
                f"share a folder with (`fuser -v {self.path}` lists every process holding it). "
                "Wait for it to finish or stop it (kill PID), then start the workers again."
            )
        return (
            f"{self.path.parent} is in use: {self.path} is locked by a live process{held_by}. "
            "Another tune-grid runs there (or workers sharing it, with --coordinator), or the "
            "training child of a killed one still writes into it (`fuser -v "
            f"{self.path}` lists every process holding it). Wait for it to finish or stop it "
            "(kill PID), then run this command again."
        )


class RunLock:
    """
    An exclusive, non-blocking `flock` on `DIR/<config_stem>/.seed_<k>.lock`, the run a worker
    trains: `acquired` says whether this process got it (another live process trains the run
    otherwise). `fd` goes to the training child as `ResultsDirLock.fd` does, so an orphaned
    child keeps the run taken; the file records the holder's worker name and child.

    # Parameters

    run_dir : `Path`
        The run's folder, `DIR/<config_stem>/seed_<k>` (it need not exist yet).
    holder : `str`
        Who takes it (the worker's name), recorded in the file.
    """

    def __init__(self, run_dir: Path, holder: str) -> None:
        self.path = run_dir.with_name(f".{run_dir.name}.lock")
        self.holder = holder
        self.fd: Optional[int] = None

    @property
    def acquired(self) -> bool:
        return self.fd is not None

    def try_acquire(self) -> bool:
        """Takes the lock unless another process holds it; returns `acquired`."""
        if self.fd is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self.fd = fd
        os.ftruncate(fd, 0)
        record_lock_holder(fd, worker=self.holder, started=timestamp())
        return True

    def holder_text(self) -> str:
        """Who holds the lock as its file says (worker, training child), for a message."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return "unknown"
        try:
            holder = _read_lock_holder(fd)
        finally:
            os.close(fd)
        return ", ".join(f"{key} {value}" for key, value in sorted(holder.items())) or "unknown"

    def __enter__(self) -> "RunLock":
        self.try_acquire()
        return self

    def __exit__(self, *exc_info) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
