"""`cost.json`'s peak RSS is the training process's own, not inherited from whoever started it."""

import subprocess
import sys

CHILD = """
from allennlp_tune.training.callbacks.cost import peak_rss_mb
before = peak_rss_mb()
block = b"x" * (400 * 2**20)  # 400 MiB, written, so resident
del block
print(before, peak_rss_mb())
"""


def test_a_child_of_a_big_parent_reports_its_own_peak():
    # The parent (this test) holds 3 GiB while the child runs, about twice the child's own peak
    # (AllenNLP imported, ~0.9 GiB, plus the 400 MiB block). Linux's ru_maxrss would carry the
    # parent's size over fork and exec and report at least 3 GiB.
    held = b"x" * (3 * 2**30)
    completed = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, check=True
    )
    assert len(held) == 3 * 2**30
    before, after = map(float, completed.stdout.split()[-2:])
    assert after - before >= 390  # the freed block still counts: a high-water mark
    assert after < 2048
