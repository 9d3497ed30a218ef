"""
`allennlp tune-compare` refuses a task file that cannot train what it says before it writes or
trains anything, with one line naming the file, the key, the value and the fix: a misspelt key,
a `num_labels` its labels disagree with, a reader parameter its reader does not take, a metric
its kind's models do not report or whose sign keeps the worst epoch, a name too long for a file
name, a data path that is no regular file or leaves the task file's folder by a symbolic link.
An `--encoder` name that is no folder and not in the Hugging Face cache fails at once offline,
and after one short request to the Hub otherwise (here a local server or a closed port).

Each case runs the real command (its parser and entry function, in this process) on a CSV task
of a few rows; none trains.
"""

import argparse
import contextlib
import csv
import http.server
import json
import logging
import os
import shutil
import socket
import sys
import threading
import time
from importlib import import_module
from pathlib import Path
from typing import Any, Dict, Iterator, Tuple

import pytest
from allennlp.data import Vocabulary

import allennlp_tune  # noqa: F401  (registers the components, sets the ext var defaults)
from allennlp_tune.commands.tune_compare import TuneCompare
from allennlp_tune.data.paths import FIXTURE_MODELS_DIR
from allennlp_tune.experiments.compare import load_task, resolve_encoder
from allennlp_tune.experiments.encoder_check import hub_command
from allennlp_tune.experiments.task_checks import (
    FALLING_METRICS,
    POSITIVE_LABEL_METRICS,
    RISING_METRICS,
)
from allennlp_tune.training.metrics import ClassificationMetrics, RegressionMetrics

BERT = FIXTURE_MODELS_DIR / "bert-uncased"


def write_task(folder: Path, **fields: Any) -> Path:
    """A sentiment CSV (train 4 rows, dev 2, labels pos and neg) and its task file."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in (("train.csv", 4), ("dev.csv", 2)):
        with open(folder / name, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["review", "sentiment"])
            for i in range(rows):
                writer.writerow(["a great film", "pos"] if i % 2 else ["a dull film", "neg"])
    task = {
        "name": "reviews",
        "kind": "classification",
        "reader": {
            "type": "tune_table",
            "header": True,
            "text": "review",
            "label": "sentiment",
            "labels_file": "train.csv",
        },
        "train": "train.csv",
        "validation": "dev.csv",
        "metric": "+accuracy",
    }
    task.update(fields)
    path = folder / "task.jsonnet"
    path.write_text(json.dumps({k: v for k, v in task.items() if v is not None}), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def parser():
    """
    Runs `allennlp tune-compare ARGV...` as the `allennlp` script parses and runs it, with the
    subcommand's own parser and entry function (without importing the plugins again per call).
    """
    parser = argparse.ArgumentParser(prog="allennlp")
    TuneCompare().add_subparser(parser.add_subparsers())

    def run(*argv: str) -> int:
        args = parser.parse_args(list(argv))
        try:
            args.func(args)
        except SystemExit as exit:
            return exit.code
        return 0

    return run


def tune_compare(
    parser, capsys, tmp_path: Path, task: Path, encoder: str = str(BERT)
) -> Tuple[int, str]:
    """`allennlp tune-compare TASK ... --plan-only` as a user runs it: (exit code, stderr)."""
    argv = ["tune-compare", str(task), "--encoder", encoder, "--modes", "ft", "--seeds", "1"]
    argv += ["--results-dir", str(tmp_path / "results"), "--plan-only", "--no-progress"]
    code = parser(*argv)
    return code, capsys.readouterr().err


def refusal(parser, capsys, tmp_path: Path, task: Path) -> str:
    """The one line tune-compare refuses `task` with, before it writes anything."""
    code, err = tune_compare(parser, capsys, tmp_path, task)
    assert code == 2, err
    assert not (tmp_path / "results").exists()
    line = err.strip().splitlines()[-1]
    assert line.startswith(f"allennlp tune-compare: task file {task}: "), line
    return line


@pytest.mark.parametrize(
    "key, known",
    [("valdiation", "validation"), ("tset", "test"), ("postive_label", "positive_label")],
)
def test_a_misspelt_key_is_refused_with_the_nearest_known_one(parser, capsys, tmp_path, key, known):
    fields = {key: "dev.csv" if key != "postive_label" else "pos"}
    if known == "validation":
        fields["validation"] = None
    line = refusal(parser, capsys, tmp_path, write_task(tmp_path / "task", **fields))
    assert f"unknown key {key!r}; did you mean {known!r}? (known keys: name, kind," in line


def test_num_labels_that_the_labels_disagree_with_is_refused(parser, capsys, tmp_path):
    line = refusal(parser, capsys, tmp_path, write_task(tmp_path / "task", num_labels=5))
    labels_file = tmp_path / "task" / "train.csv"
    assert f"num_labels is 5, but the reader's labels_file {labels_file} has 2 labels" in line
    assert load_task(str(write_task(tmp_path / "agrees", num_labels=2))).fields["num_labels"] == 2


@pytest.mark.parametrize(
    "key, hint",
    [("delimeter", ""), ("text_pairs", "; did you mean 'text_pair'?")],
)
def test_a_parameter_the_reader_does_not_take_is_refused(parser, capsys, tmp_path, key, hint):
    task = write_task(tmp_path / "task")
    fields = json.loads(task.read_text())
    fields["reader"][key] = ","
    task.write_text(json.dumps(fields))
    line = refusal(parser, capsys, tmp_path, task)
    assert f"reader.{key}: the 'tune_table' reader takes no parameter {key!r}{hint} (" in line
    assert "labels_file" in line and "max_instances" in line  # its own and DatasetReader's


@pytest.mark.parametrize(
    "metric, message",
    [
        (
            "+f2",
            "metric '+f2': the models of kind classification do not report 'f2'; did you "
            "mean '+f1'? (they report +accuracy, +mcc, -loss, and with positive_label +precision",
        ),
        ("+pearson", "do not report 'pearson'"),
        ("+f1", "metric '+f1' is reported only for a positive_label; add \"positive_label\""),
        ("accuracy", "metric 'accuracy' lacks its direction; write '+accuracy'"),
        (
            "-accuracy",
            "metric '-accuracy' would keep the epoch with the lowest accuracy, the "
            "worst one (higher is better); write '+accuracy'.",
        ),
    ],
)
def test_a_metric_the_models_do_not_report_or_the_wrong_sign_is_refused(
    parser, capsys, tmp_path, metric, message
):
    line = refusal(parser, capsys, tmp_path, write_task(tmp_path / "task", metric=metric))
    assert message in line


def test_the_metrics_each_kind_reports_are_accepted(tmp_path):
    for metric in ["-loss", "+mcc", ["+accuracy", "-loss"]]:
        load_task(str(write_task(tmp_path / "a", metric=metric)))
    load_task(str(write_task(tmp_path / "b", metric="+f1", positive_label="pos")))
    table = {"type": "tune_table", "header": True, "text": "review", "text_pair": "review"}
    for metric in ["+pearson", "+spearman", "-mse"]:
        pair = {"kind": "pair_regression", "reader": {**table, "label": "sentiment"}}
        load_task(str(write_task(tmp_path / "c", metric=metric, **pair)))
    columns = {"type": "tune_columns", "token_column": 0, "tag_column": 1, "separator": ","}
    tagging = {"kind": "tagging", "reader": {**columns, "coding_scheme": "IOB2"}}
    load_task(str(write_task(tmp_path / "d", metric="+f1-measure-overall", **tagging)))


def test_the_metric_lists_are_what_the_metric_sets_report():
    """The checks' lists against the metric sets the models report with (AllenNLP adds loss)."""
    vocab = Vocabulary()
    vocab.add_tokens_to_namespace(["neg", "pos"], "labels")
    classification = RISING_METRICS["classification"]
    assert set(ClassificationMetrics(vocab).get_metric()) == set(classification)
    with_positive = set(ClassificationMetrics(vocab, positive_label="pos").get_metric())
    assert with_positive == set(classification + POSITIVE_LABEL_METRICS)
    regression = set(RISING_METRICS["regression"] + FALLING_METRICS["regression"]) - {"loss"}
    assert set(RegressionMetrics().get_metric()) == regression


def test_a_task_name_too_long_for_a_file_name_is_refused(parser, capsys, tmp_path):
    line = refusal(parser, capsys, tmp_path, write_task(tmp_path / "task", name="r" * 300))
    assert "name is 300 characters long ('rrrrrrrrrrrrrrrrrrrr'...); give at most 64" in line


@pytest.mark.parametrize("what", ["a directory", "a named pipe (FIFO)"])
def test_a_data_path_that_is_no_regular_file_is_named_for_what_it_is(
    parser, capsys, tmp_path, what
):
    task = write_task(tmp_path / "task", validation="dev")
    if what == "a directory":
        (tmp_path / "task" / "dev").mkdir()
    else:
        os.mkfifo(tmp_path / "task" / "dev")
    line = refusal(parser, capsys, tmp_path, task)
    assert f"validation 'dev' is {tmp_path / 'task' / 'dev'}, which is {what}, not a data" in line


@pytest.mark.skipif(sys.platform == "win32", reason="symbolic links")
def test_a_link_out_of_the_task_folder_is_refused_unread_unless_allowed(parser, capsys, tmp_path):
    outside = tmp_path / "secret.csv"
    outside.write_text("review,sentiment\nthe secret first line,pos\n", encoding="utf-8")
    task = write_task(tmp_path / "task", validation="dev_link.csv")
    link = tmp_path / "task" / "dev_link.csv"
    link.symlink_to(outside)
    line = refusal(parser, capsys, tmp_path, task)
    assert f"goes through the symbolic link {link} to {outside}, outside the task file's" in line
    assert '"allow_outside_links": true' in line and "secret first line" not in line

    # A folder link counts too; a link that stays inside the folder is followed.
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "task" / "data").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "elsewhere" / "dev.csv").write_text("review,sentiment\nx,pos\n")
    task = write_task(tmp_path / "task", validation="data/dev.csv")
    assert "symbolic link" in refusal(parser, capsys, tmp_path, task)
    (tmp_path / "task" / "inside.csv").symlink_to(tmp_path / "task" / "dev.csv")
    load_task(str(write_task(tmp_path / "task", validation="inside.csv")))
    allowed = write_task(tmp_path / "task", validation="dev_link.csv", allow_outside_links=True)
    assert load_task(str(allowed)).patch["validation"] == str(link)


def test_an_encoder_not_cached_fails_at_once_offline(parser, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    task = write_task(tmp_path / "task")
    started = time.monotonic()
    code, err = tune_compare(parser, capsys, tmp_path, task, encoder="some-org/not-installed")
    assert code == 2 and time.monotonic() - started < 5, err
    assert err.strip().splitlines()[-1] == (
        "allennlp tune-compare: --encoder some-org/not-installed: no such folder, and not in the "
        f"Hugging Face cache ({tmp_path / 'hub'}); HF_HUB_OFFLINE=1 is set, so it cannot be "
        "downloaded. Give a local folder, or unset HF_HUB_OFFLINE and download it first: "
        f"{hub_command('download', 'some-org/not-installed')}."
    )
    assert not (tmp_path / "results").exists()


@contextlib.contextmanager
def hub_answering(status: int, headers: Dict[str, str]) -> Iterator[str]:
    """A local HTTP server that answers every GET with `status`: the Hub's address for a test."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the name http.server calls)
            self.send_response(status)
            for key, value in {**headers, "Content-Length": "0"}.items():
                self.send_header(key, value)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def closed_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


@pytest.fixture
def hub_online(monkeypatch) -> Iterator[None]:
    """The Hub client online in this process: tests/conftest.py sets HF_HUB_OFFLINE=1 before
    huggingface_hub is imported, which reads it once, into its constants and HTTP sessions."""
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False, raising=False)
    reset = getattr(import_module("huggingface_hub.utils"), "reset_sessions", lambda: None)
    reset()
    yield
    monkeypatch.undo()
    reset()


def test_an_encoder_not_cached_fails_fast_when_the_hub_lacks_it_or_is_out_of_reach(
    parser, capsys, tmp_path, monkeypatch, hub_online
):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    task = write_task(tmp_path / "task")
    name = "some-org/not-installed"
    with hub_answering(404, {"X-Error-Code": "RepoNotFound"}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub)
        code, err = tune_compare(parser, capsys, tmp_path, task, encoder=name)
    assert code == 2
    assert f"--encoder {name}: no such folder, and the Hugging Face Hub ({hub}) has no model" in err
    nowhere = closed_port()
    monkeypatch.setenv("HF_ENDPOINT", nowhere)
    started = time.monotonic()
    code, err = tune_compare(parser, capsys, tmp_path, task, encoder=name)
    assert code == 2 and time.monotonic() - started < 5, err
    assert f"the Hugging Face Hub ({nowhere}) cannot be asked: the connection was refused" in err
    assert f"({hub_command('download', name)})" in err
    assert not (tmp_path / "results").exists()


def test_a_cached_encoder_and_a_folder_need_no_network(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    snapshot = tmp_path / "hub" / "models--some-org--cached" / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    assert resolve_encoder("some-org/cached").ext_vars == {"TUNE_BERT_MODEL": "some-org/cached"}
    assert resolve_encoder(str(BERT)).ext_vars == {"TUNE_BERT_MODEL": str(BERT)}
    assert resolve_encoder("elmo").family == "elmo"


def plan_refusal(parser, capsys, tmp_path: Path, task: Path) -> str:
    """The one line `--plan-only` refuses `task` with after its plan (nothing trained)."""
    code, err = tune_compare(parser, capsys, tmp_path, task)
    assert code == 2, err
    assert "Traceback" not in err and not (tmp_path / "results" / "reviews_bertuncased_ft").exists()
    line = err.strip().splitlines()[-1]
    prefix = "allennlp tune-compare: the plan found what would fail: reviews_bertuncased_ft: "
    assert line.startswith(prefix), line
    return line[len(prefix) :]


@pytest.mark.parametrize("split", ["train", "dev"])
def test_plan_only_names_the_row_longer_than_the_encoders_positions(
    parser, capsys, tmp_path, split
):
    """A row of more wordpieces than the fixture BERT's 64 positions (line 3: the header, then
    two rows): on abacd86 `--plan-only` planned it (exit 0) and every run then failed in the
    embedder, naming no file or line."""
    task = write_task(tmp_path / "task")
    data = tmp_path / "task" / f"{split}.csv"
    lines = data.read_text(encoding="utf-8").splitlines()
    lines[2] = '"' + " ".join(["film"] * 100) + '",' + lines[2].rsplit(",", 1)[1]
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    problem = plan_refusal(parser, capsys, tmp_path, task)
    assert problem.startswith(f"{data}, line 3: an input of 102 wordpieces, but {BERT} has 64 ")
    assert "shorten or remove it, or set max_length (at most 64)" in problem


def test_the_planner_names_a_long_row_without_the_tokenizers_own_warning(parser, capsys, tmp_path):
    """With a tokenizer that knows its maximum length (all-MiniLM-L6-v2: 512, here 64),
    transformers warns about the long row ("Token indices sequence length is longer ...",
    naming no file or line) before the plan's own line names it: only the plan's line shows."""
    encoder = tmp_path / "bert-64"
    shutil.copytree(BERT, encoder)
    settings = json.loads((encoder / "tokenizer_config.json").read_text(encoding="utf-8"))
    settings["model_max_length"] = 64
    (encoder / "tokenizer_config.json").write_text(json.dumps(settings), encoding="utf-8")
    task = write_task(tmp_path / "task")
    data = tmp_path / "task" / "train.csv"
    lines = data.read_text(encoding="utf-8").splitlines()
    lines[2] = '"' + " ".join(["film"] * 100) + '",' + lines[2].rsplit(",", 1)[1]
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    # transformers' loggers write to a handler made at import (not pytest's capture), under
    # the "transformers" logger that does not propagate: what reaches it is recorded here.
    records = []
    recorder = logging.Handler()
    recorder.emit = records.append
    library = logging.getLogger("transformers")
    library.addHandler(recorder)
    try:
        code, err = tune_compare(parser, capsys, tmp_path, task, encoder=str(encoder))
    finally:
        library.removeHandler(recorder)
    assert code == 2 and f"{data}, line 3: an input of 102 wordpieces, but {encoder}" in err, err
    shown = [record.getMessage() for record in records if record.levelno >= logging.WARNING]
    assert not [line for line in shown if "Token indices sequence length" in line], shown


def test_plan_only_reads_the_test_split_and_names_its_bad_row(parser, capsys, tmp_path):
    """A test file with a label the train file lacks: `--plan-only` reads the test split as
    `--test` will and names the row (on abacd86 it planned, exit 0, and every run then failed:
    AllenNLP's train read the test file whole); a good test file plans."""
    test_file = tmp_path / "task" / "test.csv"
    task = write_task(tmp_path / "task", test="test.csv")
    test_file.write_text("review,sentiment\na fine film,pos\nso so,meh\n", encoding="utf-8")
    problem = plan_refusal(parser, capsys, tmp_path, task)
    assert problem.startswith(f"test data: {test_file}, line 3: unknown label (column ")
    assert "'meh'" in problem and problem.endswith("training does not read it)")
    test_file.write_text("review,sentiment\na fine film,pos\nso so,neg\n", encoding="utf-8")
    code, err = tune_compare(parser, capsys, tmp_path, task)
    assert code == 0, err
