"""
tune-grid's children start without `tokenizers`' fork warning. The planner runs a fast tokenizer
in the grid's process before any training starts; after that every fork printed four lines
("The current process just got forked, after parallelism has already been used...") to the
grid's own output, for each training and prediction child (three times for two seeds of one
sf cell in runs/logs/cpu_sf_sick_r.log).
"""

import os
import subprocess
import sys

import pytest
from transformers import AutoTokenizer

from allennlp_tune.data.paths import REPO_ROOT
from allennlp_tune.experiments.process import train_subprocess

CHILD = "import os; print(os.environ.get('TOKENIZERS_PARALLELISM', 'unset'))"


def test_a_child_started_after_a_fast_tokenizer_ran_gets_no_fork_warning(
    tmp_path, capfd, monkeypatch
):
    monkeypatch.delenv("TOKENIZERS_PARALLELISM", raising=False)
    tokenizer = AutoTokenizer.from_pretrained(str(REPO_ROOT / "fixtures/models/bert-uncased"))
    tokenizer(["the planner counts wordpieces"] * 64)  # a batch: the Rust side goes parallel
    capfd.readouterr()
    # A plain fork now warns (a preexec_fn makes subprocess fork, as tune-grid's does).
    subprocess.run([sys.executable, "-c", "pass"], preexec_fn=lambda: None, check=True)
    if "just got forked" not in capfd.readouterr().err:
        pytest.skip("this tokenizers version prints no warning at fork")

    log = tmp_path / "child.log"
    assert train_subprocess([sys.executable, "-c", CHILD], dict(os.environ), log) == 0

    assert "just got forked" not in capfd.readouterr().err
    # The child's environment is the one it was given; this process's is as it was.
    assert log.read_text().strip() == "unset"
    assert "TOKENIZERS_PARALLELISM" not in os.environ


def test_a_users_own_setting_is_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    log = tmp_path / "child.log"
    assert train_subprocess([sys.executable, "-c", CHILD], dict(os.environ), log) == 0
    assert log.read_text().strip() == "false"
    assert os.environ["TOKENIZERS_PARALLELISM"] == "false"
