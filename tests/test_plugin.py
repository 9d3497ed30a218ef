"""The plugin loads as installed, through `.allennlp_plugins` and through `--include-package`."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from allennlp_tune.data.paths import FIXTURE_DATA_DIR, REPO_ROOT

CONFIG = "fixtures/configs/sst2_tiny_bert.jsonnet"


def allennlp(*args: str, cwd: Path, **environment: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, TUNE_DATA_DIR=str(FIXTURE_DATA_DIR), HF_HUB_OFFLINE="1", **environment)
    command = [sys.executable, "-m", "allennlp", *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    """Trained from the repository root with no --include-package: .allennlp_plugins loads it."""
    out = tmp_path_factory.mktemp("plugin") / "run"
    result = allennlp("train", CONFIG, "-s", str(out), cwd=REPO_ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    return out / "model.tar.gz"


def test_train_from_repo_root_uses_the_plugin_file(archive):
    metrics = json.loads((archive.parent / "metrics.json").read_text())
    assert metrics["epoch"] == 1  # two epochs, counted from 0
    assert 0.0 <= metrics["validation_accuracy"] <= 1.0


def test_without_plugin_file_the_installed_plugin_is_found_and_include_package_still_works(
    tmp_path,
):
    config = str(REPO_ROOT / CONFIG)
    # The model path in the config is relative to the repository root: run from a copy there.
    (tmp_path / "fixtures").symlink_to(REPO_ROOT / "fixtures")
    # No `.allennlp_plugins` here and none in HOME: the installed plugin is discovered
    # (allennlp_tune/compat.py, fix 12), so its `sst2` reader is known.
    home = {"HOME": str(tmp_path / "home")}
    found = allennlp("train", config, "-s", str(tmp_path / "a"), cwd=tmp_path, **home)
    assert found.returncode == 0, found.stderr[-3000:]
    assert (tmp_path / "a" / "model.tar.gz").is_file()
    # A quiet start (fix 13), and AllenNLP's training log as AllenNLP writes it.
    output = found.stdout + found.stderr
    assert "Plugin allennlp_models available" not in output
    assert " - INFO - allennlp.training.gradient_descent_trainer - Beginning training" in output
    # Discovered, then imported again with every submodule: no duplicate registration.
    result = allennlp(
        "train",
        config,
        "-s",
        str(tmp_path / "b"),
        "--include-package",
        "allennlp_tune",
        cwd=tmp_path,
        **home,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "b" / "model.tar.gz").is_file()


def test_evaluate_and_predict_on_the_archive(archive, tmp_path):
    dev = str(FIXTURE_DATA_DIR / "sst-2" / "dev.tsv")
    evaluation = allennlp(
        "evaluate", str(archive), dev, "--output-file", str(tmp_path / "m.json"), cwd=REPO_ROOT
    )
    assert evaluation.returncode == 0, evaluation.stderr[-3000:]
    assert "accuracy" in json.loads((tmp_path / "m.json").read_text())
    inputs = tmp_path / "in.jsonl"
    inputs.write_text(json.dumps({"sentence": "a charming and funny film"}) + "\n")
    prediction = allennlp(
        "predict",
        str(archive),
        str(inputs),
        "--silent",
        "--output-file",
        str(tmp_path / "out.jsonl"),
        cwd=REPO_ROOT,
    )
    assert prediction.returncode == 0, prediction.stderr[-3000:]
    output = json.loads((tmp_path / "out.jsonl").read_text().splitlines()[0])
    assert output["label"] in {"0", "1"} and len(output["probs"]) == 2
