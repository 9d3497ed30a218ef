"""
EDGE's cost is linear in the number of samples: time at N = 10,000 and 20,000 (dim 384, the
MiniLM hidden size; two classes) and their ratio, which should be at most 2.2.

    OMP_NUM_THREADS=1 .venv/bin/python bench/bench_mi.py [--repeats 5] [--dim 384] \\
        [--estimator edge|edge_projected|edge_projected_uncorrected]

Reports the median wall and CPU (process) time of `--repeats` runs after one warm-up run. On a
shared machine the CPU time is the one to read: wall time counts the other jobs too.
"""

import argparse
import statistics
import time
import tracemalloc
from functools import partial

import numpy as np

from allennlp_tune.analysis.edge import edge_mutual_information, edge_projected_mutual_information

TARGET_RATIO = 2.2
ESTIMATORS = {
    "edge": edge_mutual_information,
    "edge_projected": edge_projected_mutual_information,
    "edge_projected_uncorrected": partial(
        edge_projected_mutual_information, correct_attenuation=False
    ),
}


def time_estimator(estimate, num_samples: int, dim: int, repeats: int):
    rng = np.random.default_rng(0)
    features = rng.standard_normal((num_samples, dim)).astype(np.float32)
    labels = rng.integers(0, 2, num_samples)
    features[:, 0] += labels  # some signal, so the corrected estimator's stretch runs
    estimate(features, labels)  # warm-up
    walls, cpus = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        estimate(features, labels)
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - start_cpu)
    tracemalloc.start()  # numpy reports its buffers to tracemalloc
    estimate(features, labels)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return statistics.median(walls), statistics.median(cpus), peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--estimator", choices=sorted(ESTIMATORS), default="edge")
    args = parser.parse_args()
    estimate = ESTIMATORS[args.estimator]
    print(f"{args.estimator}, dim {args.dim}, median of {args.repeats}:")
    results = {}
    for num_samples in (10_000, 20_000):
        wall, cpu, peak = time_estimator(estimate, num_samples, args.dim, args.repeats)
        results[num_samples] = (wall, cpu)
        print(
            f"  N = {num_samples:,}: wall {wall:.3f} s, CPU {cpu:.3f} s, "
            f"peak {peak:.1f} MiB above the inputs"
        )
    for name, index in (("wall", 0), ("CPU", 1)):
        ratio = results[20_000][index] / results[10_000][index]
        verdict = "ok" if ratio <= TARGET_RATIO else "ABOVE TARGET"
        print(f"  {name} ratio: {ratio:.2f} (target <= {TARGET_RATIO}: {verdict})")


if __name__ == "__main__":
    main()
