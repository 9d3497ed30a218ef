"""
EDGE's cost is linear in the number of samples: time at N = 10,000 and 20,000 (dim 384, the
MiniLM hidden size; two classes) and their ratio, which should be at most 2.2.

    .venv/bin/python bench/bench_mi.py [--repeats 5] [--dim 384]

Reports the median wall time of `--repeats` runs after one warm-up run.
"""

import argparse
import statistics
import time
import tracemalloc

import numpy as np

from allennlp_tune.analysis.edge import edge_mutual_information

TARGET_RATIO = 2.2


def time_edge(num_samples: int, dim: int, repeats: int) -> float:
    rng = np.random.default_rng(0)
    features = rng.standard_normal((num_samples, dim)).astype(np.float32)
    labels = rng.integers(0, 2, num_samples)
    edge_mutual_information(features, labels)  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        edge_mutual_information(features, labels)
        times.append(time.perf_counter() - start)
    tracemalloc.start()  # numpy reports its buffers to tracemalloc
    edge_mutual_information(features, labels)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return statistics.median(times), peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dim", type=int, default=384)
    args = parser.parse_args()
    small, small_mb = time_edge(10_000, args.dim, args.repeats)
    large, large_mb = time_edge(20_000, args.dim, args.repeats)
    ratio = large / small
    print(f"EDGE, dim {args.dim}, median of {args.repeats}:")
    print(f"  N = 10,000: {small:.3f} s, peak {small_mb:.1f} MiB above the inputs")
    print(f"  N = 20,000: {large:.3f} s, peak {large_mb:.1f} MiB above the inputs")
    verdict = "ok" if ratio <= TARGET_RATIO else "ABOVE TARGET"
    print(f"  ratio: {ratio:.2f} (target <= {TARGET_RATIO}: {verdict})")


if __name__ == "__main__":
    main()
