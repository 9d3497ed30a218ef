"""
One writer per results directory. A grid holds an exclusive `flock` on
`DIR/.tune_grid.lock` while it runs, and every training child inherits the locked descriptor
(`LOCK_FD_ENV` names it in the child's environment; `process.train_subprocess` keeps it open
there), so the directory is free only once both are gone. A second grid on the same directory,
or a rerun while the child of a killed grid still trains, is refused with the pids holding the
lock: the lock file records who holds it, for that message (the flock itself is the lock).
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
    """

    def __init__(self, results_dir: Path) -> None:
        self.path = results_dir / LOCK_NAME
        self.fd: Optional[int] = None

    def __enter__(self) -> "ResultsDirLock":
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_lock_holder(fd)
            os.close(fd)
            raise ConfigurationError(self._refusal(holder)) from None
        self.fd = fd
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
        return (
            f"{self.path.parent} is in use: {self.path} is locked by a live process{held_by}. "
            "Another tune-grid runs there, or the training child of a killed one still writes "
            f"into it (`fuser -v {self.path}` lists every process holding it). Wait for it "
            "to finish or stop it (kill PID), then run this command again."
        )
