"""
Peak memory of one call, measured in a fresh process: the call runs in a child started with
`spawn` (nothing inherited from the parent's heap), and the child's peak resident set size
(libraries, model weights, activations, allocator caches, all of it) comes back with the
call's result. On Linux the peak is `VmHWM` from /proc/self/status, not `ru_maxrss`: Linux
carries `ru_maxrss` over fork and exec, so a child of a big parent (a pytest worker that has
trained models) would report the parent's size. Side-by-side comparisons run each side in its
own child, one after the other, so neither side's memory is counted in the other's figure.
"""

import multiprocessing
import queue as queue_module
import resource
from typing import Any, Callable, Tuple


def _child(queue, target: Callable, args: tuple) -> None:
    try:
        result = target(*args)
    except BaseException as error:  # report, so the parent does not wait forever
        queue.put(("error", repr(error), 0.0))
        raise
    queue.put(("ok", result, _peak_mib()))


def _peak_mib() -> float:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # "VmHWM:    13628 kB"
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def in_fresh_process(target: Callable, *args: Any) -> Tuple[Any, float]:
    """`target(*args)` in a new process: its result and the process's peak RSS in MiB."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=_child, args=(queue, target, args))
    process.start()
    while True:
        try:
            status, result, peak_mib = queue.get(timeout=1.0)
            break
        except queue_module.Empty:
            # A child killed by a signal (the kernel's OOM killer, a Ctrl-C) reports nothing.
            if not process.is_alive():
                process.join()
                raise RuntimeError(
                    f"{getattr(target, '__name__', target)} died in its process "
                    f"(exit code {process.exitcode}) without reporting a result"
                ) from None
    process.join()
    if status != "ok" or process.exitcode != 0:
        raise RuntimeError(f"{getattr(target, '__name__', target)} failed in its process: {result}")
    return result, peak_mib
