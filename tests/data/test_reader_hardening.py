"""
What a user's data file cannot do to the readers: crash them with a bare traceback (JSON nested
too deep, an unknown encoding), or be read quietly wrong (labels that are one number written in
several ways, numbers Python's `float` reads but nobody meant, labels with stray spaces).
"""

import copy
import logging
import re
from pathlib import Path

import pytest
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import DatasetReader

import allennlp_tune  # noqa: F401  (registers the readers)
from allennlp_tune.data.dataset_readers.task_reader import InvalidRow, TaskReader

WHITESPACE = {"type": "whitespace"}
DEPTH = 100_000
DEEP_LINE = "[" * DEPTH + "]" * DEPTH


def make_reader(**params) -> DatasetReader:
    params.setdefault("tokenizer", WHITESPACE)
    return DatasetReader.from_params(Params(copy.deepcopy({"type": "tune_table", **params})))


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", newline="")
    return str(path)


def read_error(reader: DatasetReader, path: str) -> str:
    with pytest.raises(ConfigurationError) as error:
        list(reader.read(path))
    return str(error.value)


# ----------------------------------------------------------------------------------------------
# Bare tracebacks
# ----------------------------------------------------------------------------------------------
JSONL = {"kind": "classification", "text": "s", "label": "y", "labels": ["pos", "neg"]}


def test_a_json_line_nested_too_deep_is_an_invalid_row(tmp_path, caplog):
    rows = '{"s": "good", "y": "pos"}\n' + DEEP_LINE + '\n{"s": "bad", "y": "neg"}\n'
    path = write(tmp_path, "train.jsonl", rows)
    message = read_error(make_reader(**JSONL), path)
    assert message.startswith(f"{path}, line 2: arrays or objects nested deeper than Python's")
    assert "skip_invalid: true" in message
    # With skip_invalid it is skipped and counted like any other invalid row.
    with caplog.at_level(logging.WARNING):
        instances = list(make_reader(**JSONL, skip_invalid=True).read(path))
    assert [instance["label"].label for instance in instances] == ["pos", "neg"]
    assert any("Skipped 1 invalid rows" in record.getMessage() for record in caplog.records)
    # The same line in a labels_file.
    reader = make_reader(kind="classification", text="s", label="y", labels_file=path)
    assert read_error(reader, path).startswith(f"{path}, line 2: arrays or objects nested")


def test_mnli_json_lines_nested_too_deep(tmp_path):
    row = '{"sentence1": "a", "sentence2": "b", "gold_label": "neutral"}\n'
    path = write(tmp_path, "dev_matched.jsonl", row + DEEP_LINE + "\n")
    reader = DatasetReader.from_params(Params({"type": "mnli", "tokenizer": dict(WHITESPACE)}))
    assert read_error(reader, path).startswith(f"{path}, line 2: arrays or objects nested")


@pytest.mark.parametrize(
    "encoding, problem",
    [("klingon", "which Python does not know"), ("rot13", "does not decode bytes to text")],
)
def test_an_unknown_encoding_is_refused_when_the_reader_is_built(encoding, problem):
    with pytest.raises(ConfigurationError) as error:
        make_reader(**JSONL, encoding=encoding)
    message = str(error.value)
    assert message.startswith(f"dataset_reader.encoding is {encoding!r}") and problem in message
    assert make_reader(**JSONL, encoding="latin-1") is not None


# ----------------------------------------------------------------------------------------------
# Quietly wrong values
# ----------------------------------------------------------------------------------------------
CSV = {"kind": "classification", "header": True, "text": "t", "label": "y"}


@pytest.mark.parametrize("one", ["1.0", "01", "+1", "1e0", "\uff11"])  # `１`: full-width 1
def test_labels_that_are_one_number_written_differently_are_an_error(tmp_path, one):
    path = write(tmp_path, "train.csv", f"t,y\na,1\nb,0\nc,{one}\nd,1\n")
    message = read_error(make_reader(**CSV, labels_file=path), path)
    assert message.startswith(
        f"{path} (dataset_reader.labels_file): the labels '1' (line 2), {one!r} (line 4) are "
        "the same number written in 2 ways"
    )
    assert "list them all in dataset_reader.labels" in message


def test_number_labels_listed_in_labels_stay_as_written(tmp_path):
    path = write(tmp_path, "train.csv", "t,y\na,1\nb,1.0\nc,01\nd,0\n")
    labels = [
        instance["label"].label
        for instance in make_reader(**CSV, labels=["1", "1.0", "01", "0"]).read(path)
    ]
    assert labels == ["1", "1.0", "01", "0"]


def test_distinct_number_labels_in_a_labels_file_are_fine(tmp_path):
    path = write(tmp_path, "train.csv", "t,y\na,1\nb,2\nc,10\nd,1\n")
    reader = make_reader(**CSV, labels_file=path)
    assert [instance["label"].label for instance in reader.read(path)] == ["1", "2", "10", "1"]


@pytest.mark.parametrize("score", ["1_0", "\uff13", "\u0663", "0x1p1", "inf"])  # `３`, Arabic `٣`
def test_scores_outside_the_number_grammar_are_refused(tmp_path, score):
    path = write(tmp_path, "d.csv", f"t,s\na,2.5\nb,{score}\n")
    reader = make_reader(kind="regression", header=True, text="t", label="s")
    message = read_error(reader, path)
    assert message.startswith(f"{path}, line 3: the label (column 's') {score!r} is not a ")
    assert re.search(r"is not a (finite )?number", message)


def test_scores_in_the_grammar_and_json_numbers_are_read(tmp_path):
    path = write(tmp_path, "d.csv", "t,s\na, 2.5\nb,-0.5\nc,.5\nd,4.\ne,1e-1\nf,+3\n")
    reader = make_reader(kind="regression", header=True, text="t", label="s")
    scores = [float(instance["label"].tensor) for instance in reader.read(path)]
    assert scores == pytest.approx([2.5, -0.5, 0.5, 4.0, 0.1, 3.0])
    path = write(tmp_path, "d.jsonl", '{"t": "a", "s": 3}\n{"t": "b", "s": "1_0"}\n')
    message = read_error(make_reader(kind="regression", text="t", label="s"), path)
    assert message.startswith(f"{path}, line 2: the label (key 's') '1_0' is not a number")


def test_the_task_readers_scores_follow_the_same_grammar():
    assert TaskReader.score(" 4.5 ", 0.0, 5.0) == 4.5
    for score in ("1_0", "\uff13"):
        with pytest.raises(InvalidRow, match=f"the score {score!r} is not a number"):
            TaskReader.score(score, 0.0, 20.0)


def test_labels_with_spaces_are_reported_once_per_file(tmp_path, caplog):
    path = write(tmp_path, "train.csv", "t,y\na,pos\nb,neg \nc, pos\nd,neg\n")
    reader = make_reader(**CSV, labels_file=path)
    with caplog.at_level(logging.WARNING):
        labels = [instance["label"].label for instance in reader.read(path)]
    assert labels == ["pos", "neg", "pos", "neg"]  # still stripped
    # Warnings only: an INFO line naming the file (AllenNLP's params, when an earlier test in
    # the process left its logger at INFO) says "spaces" too, in the test's folder name.
    warnings = [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and "spaces" in r.getMessage()
    ]
    # The file is read twice (labels_file, then as data): one warning.
    assert warnings == [
        f"{path}: 2 label(s) have spaces before or after them, the first on line 3 ('neg '); "
        "they are read without the spaces (as 'neg'). Remove the spaces if they are stray; a "
        "label cannot keep them."
    ]
