"""The multi-node path of training_config/distributed/, run for real on one machine: two
`allennlp train --node-rank 0|1` processes (one CPU worker each, gloo, loopback only) train the
distributed cell to the same metrics as one process with two workers.

About 40 s on 2 cores; deselect with `-m "not multi_node"`."""

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict

import pytest
from allennlp.commands.train import train_model_from_file

import allennlp_tune  # noqa: F401
from allennlp_tune.data.paths import FIXTURE_DATA_DIR, FIXTURE_MODELS_DIR, REPO_ROOT

CONFIG = REPO_ROOT / "training_config" / "distributed" / "sick_e_bert_ft.jsonnet"
LOOPBACK = "127.0.0.1"


def fixture_vars(cache: Path) -> Dict[str, str]:
    return {
        "TUNE_DATA_DIR": str(FIXTURE_DATA_DIR),
        "TUNE_BERT_MODEL": str(FIXTURE_MODELS_DIR / "bert-uncased"),
        "TUNE_EPOCHS": "1",
        "TUNE_BATCH_SIZE": "4",
        "TUNE_FEATURE_CACHE_DIR": str(cache),
        "TUNE_PRIMARY_ADDRESS": LOOPBACK,
    }


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        return probe.getsockname()[1]


@pytest.mark.multi_node
def test_two_nodes_train_like_one_node_with_two_workers(tmp_path, monkeypatch):
    # One node, two worker processes.
    for name, value in fixture_vars(tmp_path / "cache").items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("TUNE_CUDA_DEVICES", "[-1, -1]")
    train_model_from_file(str(CONFIG), str(tmp_path / "one_node"))
    one_node = json.loads((tmp_path / "one_node" / "metrics.json").read_text())

    # Two nodes of one worker each, talking over the loopback interface only.
    env = {k: v for k, v in os.environ.items() if not k.startswith("TUNE_")}
    env.update(fixture_vars(tmp_path / "cache_nodes"))
    env.update(
        {
            "TUNE_CUDA_DEVICES": "[-1]",
            "TUNE_NUM_NODES": "2",
            "TUNE_PRIMARY_PORT": str(free_port()),
            "GLOO_SOCKET_IFNAME": "lo",
        }
    )
    logs = [tmp_path / f"node{rank}.log" for rank in (0, 1)]
    nodes = []
    for rank, log in enumerate(logs):
        with log.open("w") as out:  # a file, not a pipe: nothing blocks on a full buffer
            nodes.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "allennlp",
                        "train",
                        str(CONFIG),
                        "-s",
                        str(tmp_path / f"node{rank}"),
                        "--node-rank",
                        str(rank),
                    ],
                    cwd=REPO_ROOT,
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )  # fmt: skip
            )
    # Wait for both; if one fails, stop the other (it would wait for its peer forever).
    deadline = time.monotonic() + 240
    while any(node.poll() is None for node in nodes) and time.monotonic() < deadline:
        if any(node.poll() not in (None, 0) for node in nodes):
            break
        time.sleep(0.5)
    for node in nodes:
        if node.poll() is None:
            node.kill()
        node.wait()
    outputs = [log.read_text() for log in logs]
    for rank, (node, output) in enumerate(zip(nodes, outputs)):
        assert node.returncode == 0, f"node {rank}:\n{output[-4000:]}"
    assert "World size: 2" in outputs[0] and "Rank of this node: 1" in outputs[1]
    two_nodes = json.loads((tmp_path / "node0" / "metrics.json").read_text())

    compared = [k for k in one_node if k.startswith(("training_", "validation_", "best_"))]
    assert "validation_accuracy" in compared and "training_loss" in compared
    for key in compared:
        if isinstance(one_node[key], float) and "duration" not in key and "memory" not in key:
            assert two_nodes[key] == pytest.approx(one_node[key], rel=1e-5, abs=1e-7), key
