import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
from peak_memory import in_fresh_process  # noqa: E402


def test_returns_the_result_and_the_childs_peak():
    # The parent holds 1 GiB: the child's peak is its own, not carried over from the parent
    # (Linux's ru_maxrss is, over fork and exec; a pytest worker is often over 2 GiB).
    held = b"x" * 2**30
    result, peak_mib = in_fresh_process(sum, [1, 2, 3])
    assert result == 6 and len(held) == 2**30
    # A spawned Python interpreter holds tens of MiB; a bogus unit (bytes, KiB) would be far off.
    assert 1 < peak_mib < 512


def test_an_exception_in_the_child_is_reported():
    with pytest.raises(RuntimeError, match="int failed in its process: ValueError"):
        in_fresh_process(int, "not a number")


def test_a_child_killed_by_a_signal_is_reported_not_waited_on():
    with pytest.raises(RuntimeError, match=r"abort died in its process \(exit code -6\)"):
        in_fresh_process(os.abort)
