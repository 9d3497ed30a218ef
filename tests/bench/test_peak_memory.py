import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
from peak_memory import in_fresh_process  # noqa: E402


def test_returns_the_result_and_the_childs_peak():
    result, peak_mib = in_fresh_process(sum, [1, 2, 3])
    assert result == 6
    # A spawned Python interpreter holds several MiB; a bogus unit (bytes, KiB) would be far off.
    assert 1 < peak_mib < 2000


def test_an_exception_in_the_child_is_reported():
    with pytest.raises(RuntimeError, match="int failed in its process: ValueError"):
        in_fresh_process(int, "not a number")


def test_a_child_killed_by_a_signal_is_reported_not_waited_on():
    with pytest.raises(RuntimeError, match=r"abort died in its process \(exit code -6\)"):
        in_fresh_process(os.abort)
