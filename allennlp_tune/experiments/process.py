"""
The training subprocess: `allennlp train CONFIG -s RUN_DIR --include-package allennlp_tune`
started with its stdout and stderr in a log, and the signals around it.

Ctrl-C and SIGTERM stop the training child too (`SigtermAsInterrupt` turns a SIGTERM into the
`KeyboardInterrupt` a Ctrl-C raises, and `train_subprocess` stops its child on either); on
Linux the child also gets SIGKILL when the grid dies any other way (`kill -9`, a crash), so no
orphan keeps writing checkpoints by path into the directory the next grid trains in. The child
keeps the grid's lock (`lock.LOCK_FD_ENV`) for its life.
"""

import contextlib
import ctypes
import functools
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional

from allennlp_tune.experiments.lock import LOCK_FD_ENV, record_lock_holder

_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>

# runner(command, environment, log_path) -> exit code. Tests replace `train_subprocess`.
Runner = Callable[[List[str], Dict[str, str], Path], int]


def train_command(config: Path, run_dir: Path, overrides: Optional[str] = None) -> List[str]:
    command = [sys.executable, "-m", "allennlp", "train", str(config.resolve())]
    command += ["-s", str(run_dir), "--include-package", "allennlp_tune"]
    command += ["--file-friendly-logging"]
    if overrides:
        command += ["--overrides", overrides]
    return command


def _stop(process: subprocess.Popen) -> None:
    # Interrupt the child as Ctrl-C would (after a Ctrl-C it has had SIGINT already; after a
    # SIGTERM to tune-grid it has not), then ask it to terminate, then insist.
    interrupt = functools.partial(process.send_signal, signal.SIGINT)
    for send, wait in ((interrupt, 10.0), (process.terminate, 10.0), (process.kill, None)):
        if process.poll() is not None:
            return
        send()
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _die_with_this_process() -> Optional[Callable[[], None]]:
    """
    A `preexec_fn` that makes the child get SIGKILL when this process dies, however it dies
    (Linux `prctl(PR_SET_PDEATHSIG)`; it survives `exec`). `None` where there is no prctl.
    A process group would not help: `kill -9` of tune-grid signals tune-grid alone.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        # Resolved here, not in the child: between fork and exec only the call itself runs.
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent, kill = os.getpid(), int(signal.SIGKILL)

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, kill, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl: no signal will come
            os._exit(1)
        # SIGINT is how the child is stopped cleanly (`_stop`). A tune-grid started in the
        # background of a non-interactive shell (`nohup ... &`, CI scripts) inherits SIGINT
        # ignored, and an ignored signal stays ignored across exec: the child would then ignore
        # it too, and be stopped only by SIGTERM 10 s later.
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    return preexec


_TOKENIZERS_PARALLELISM = "TOKENIZERS_PARALLELISM"


@contextlib.contextmanager
def _quiet_tokenizers_fork() -> Iterator[None]:
    """
    Once a fast tokenizer has run in this process (the planner counts wordpieces), `tokenizers`
    prints a four-line "the current process just got forked" warning to this process's stderr
    at every fork, unless TOKENIZERS_PARALLELISM is set. The child here execs at once, so there
    is nothing for the warning to protect: the variable is set for the fork alone. The child's
    own environment is the `env` it is given, so its tokenizers behave as before.
    """
    if _TOKENIZERS_PARALLELISM in os.environ:
        yield
        return
    os.environ[_TOKENIZERS_PARALLELISM] = "true"  # this process's own setting when unset
    try:
        yield
    finally:
        os.environ.pop(_TOKENIZERS_PARALLELISM, None)


def train_subprocess(command: List[str], environment: Dict[str, str], log_path: Path) -> int:
    """
    Runs one training with stdout and stderr into `log_path`; stops the child on interrupt. The
    child dies with this process (Linux) and keeps the grid's lock (`LOCK_FD_ENV`) for its life.
    """
    lock_fd = environment.get(LOCK_FD_ENV)
    pass_fds = (int(lock_fd),) if lock_fd else ()
    with open(log_path, "w", encoding="utf-8") as log:
        with _quiet_tokenizers_fork():
            process = subprocess.Popen(
                command,
                env=environment,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                pass_fds=pass_fds,
                preexec_fn=_die_with_this_process(),
            )
        if lock_fd:
            record_lock_holder(int(lock_fd), child_pid=process.pid, child_log=str(log_path))
        try:
            return process.wait()
        except BaseException:
            _stop(process)
            raise


# The line of a traceback that says what went wrong: `ConfigurationError: ...`, `RuntimeError:
# RUNTIME ERROR: ...` (a Jsonnet error, whose message ends in Jsonnet's own stack lines).
_ERROR_LINE = re.compile(r"^([\w.]*(Error|Exception|Interrupt)|RUNTIME ERROR)\b:")


def last_line(log_path: Path) -> str:
    """The log's last error line, else its last line (for a failed run's `error`)."""
    try:
        with open(log_path, encoding="utf-8", errors="replace") as log:
            lines = [line.strip() for line in log.readlines()[-200:] if line.strip()]
    except OSError:
        return ""
    errors = [line for line in lines if _ERROR_LINE.match(line)]
    return (errors or lines or [""])[-1][:300]


class SigtermAsInterrupt:
    """Makes `kill <pid>` (SIGTERM) stop a grid like Ctrl-C: the child is stopped too."""

    def __enter__(self):
        self.previous = None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGTERM, self._raise)
        return self

    @staticmethod
    def _raise(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    def __exit__(self, *exc_info):
        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)
