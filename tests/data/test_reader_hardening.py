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


# ----------------------------------------------------------------------------------------------
# Still read without a word: texts with no printable character, NUL bytes, duplicate JSON keys
# ----------------------------------------------------------------------------------------------
TSV = {"kind": "classification", "text": 0, "label": 1, "header": False, "labels": ["pos", "neg"]}
CONTROLS = "\x01\x02\x1b\x7f"


def skipped_and_counted(reader_params, path, caplog, labels) -> None:
    """With `skip_invalid` the row is skipped, and counted like every other invalid row."""
    with caplog.at_level(logging.WARNING):
        instances = list(make_reader(**reader_params, skip_invalid=True).read(path))
    assert [instance["label"].label for instance in instances] == labels
    assert any("Skipped 1 invalid rows" in record.getMessage() for record in caplog.records)


def task_reader_error(reader_type: str, path: str) -> str:
    params = {"type": reader_type}
    if reader_type != "tune_conll2003":
        params["tokenizer"] = dict(WHITESPACE)
    return read_error(DatasetReader.from_params(Params(params)), path)


def test_a_text_of_control_characters_only_is_empty(tmp_path, caplog):
    path = write(tmp_path, "train.tsv", f"good\tpos\n{CONTROLS}\tneg\nbad\tneg\n")
    message = read_error(make_reader(**TSV), path)
    assert message.startswith(
        f"{path}, line 2: the text (column 0) is empty (no printable character: only control, "
        "zero-width and whitespace characters)"
    )
    skipped_and_counted(TSV, path, caplog, ["pos", "neg"])
    # Every reader's texts go through the same check.
    sst2 = write(tmp_path, "sst2.tsv", "sentence\tlabel\nfine\t1\n\x01 \x02\t0\n")
    assert task_reader_error("sst2", sst2).startswith(
        f"{sst2}, line 3: the sentence is empty (no printable character"
    )
    jsonl = write(tmp_path, "train.jsonl", '{"s": "\\u0001\\u0002", "y": "pos"}\n')
    assert read_error(make_reader(**JSONL), jsonl).startswith(
        f"{jsonl}, line 1: the text (key 's') is empty (no printable character"
    )


def test_a_nul_byte_in_a_text_is_refused(tmp_path, caplog):
    path = write(tmp_path, "train.tsv", "good\tpos\nba\x00d\tneg\nbad\tneg\n")
    message = read_error(make_reader(**TSV), path)
    assert message.startswith(
        f"{path}, line 2: the text (column 0) holds a NUL byte (character 3), which no text has "
        "(a binary file, or text in another encoding such as UTF-16: set dataset_reader.encoding)."
    )
    skipped_and_counted(TSV, path, caplog, ["pos", "neg"])
    # UTF-16 without a BOM decodes as "UTF-8" with a NUL after every ASCII character.
    utf16 = tmp_path / "utf16.csv"
    utf16.write_bytes("good,pos\n".encode("utf-16-le"))
    csv_reader = make_reader(**dict(TSV, format="csv"))
    assert "line 1: the text (column 0) holds a NUL byte (character 2)" in read_error(
        csv_reader, str(utf16)
    )
    mrpc = write(tmp_path, "mrpc.txt", "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n")
    with open(mrpc, "a", encoding="utf-8") as handle:
        handle.write("1\t1\t2\tA man\x00\tA man plays\n")
    assert "the #1 String holds a NUL byte (character 6)" in task_reader_error("mrpc", mrpc)


@pytest.mark.parametrize("reader_type", ["tune_conll2003", "tune_columns"])
@pytest.mark.parametrize("token, problem", [("Pe\x00ter", "holds a NUL byte"), ("\x01", "empty")])
def test_tokens_with_a_nul_byte_or_no_printable_character_are_refused(
    tmp_path, reader_type, token, problem
):
    line = f"{token} NNP I-NP I-PER" if reader_type == "tune_conll2003" else f"{token}\tB-PER"
    path = write(tmp_path, "train.txt", f"{line}\n\n")
    params = {"type": reader_type}
    if reader_type == "tune_columns":
        params.update(token_column=0, tag_column=1, separator="tab", coding_scheme="IOB2")
    message = read_error(DatasetReader.from_params(Params(params)), path)
    assert message.startswith(f"{path}, line 1: (line 1) the token")
    assert problem in message


def test_a_duplicate_json_key_is_an_invalid_row(tmp_path, caplog):
    rows = (
        '{"s": "good", "y": "pos"}\n{"s": "bad", "y": "pos", "y": "neg"}\n{"s": "x", "y": "neg"}\n'
    )
    path = write(tmp_path, "train.jsonl", rows)
    message = read_error(make_reader(**JSONL), path)
    assert message.startswith(
        f"{path}, line 2: the JSON object has the key 'y' twice (which value is meant?); "
        "expected one JSON object a line, each key once"
    )
    skipped_and_counted(JSONL, path, caplog, ["pos", "neg"])
    # Nested objects too, and MultiNLI's JSON lines.
    nested = write(tmp_path, "nested.jsonl", '{"s": "good", "y": "pos", "m": {"a": 1, "a": 2}}\n')
    assert "has the key 'a' twice" in read_error(make_reader(**JSONL), nested)
    mnli = write(
        tmp_path,
        "dev_matched.jsonl",
        '{"sentence1": "a", "sentence2": "b", "sentence2": "c", "gold_label": "neutral"}\n',
    )
    assert task_reader_error("mnli", mnli).startswith(
        f"{mnli}, line 1: the JSON object has the key 'sentence2' twice"
    )


def test_a_duplicate_json_key_in_the_predictors_input_is_named():
    from allennlp_tune.predictors.json_lines import JsonLinesPredictor

    predictor = JsonLinesPredictor.__new__(JsonLinesPredictor)
    predictor._lines_read = 0
    with pytest.raises(ConfigurationError) as error:
        predictor.load_line('{"sentence": "good", "sentence": "bad"}')
    assert str(error.value).startswith(
        "input line 1 (blank lines not counted): the JSON object has the key 'sentence' twice"
    )


# ----------------------------------------------------------------------------------------------
# Misleading: a field over the CSV field limit is not "broken CSV quoting"
# ----------------------------------------------------------------------------------------------
def test_a_field_over_the_csv_field_limit_says_so(tmp_path, caplog):
    import csv

    huge = "word " * (csv.field_size_limit() // 5 + 10)
    rows = f"text,label\ngood,pos\n{huge},neg\nbad,neg\n"
    path = write(tmp_path, "train.csv", rows)
    params = {
        "kind": "classification",
        "text": "text",
        "label": "label",
        "labels": ["pos", "neg"],
        "header": True,
    }
    message = read_error(make_reader(**params), path)
    assert message.startswith(
        f"{path}, line 3: a field on line 3 is longer than Python's CSV field limit "
        f"({csv.field_size_limit():,} characters). A text that long is more than any encoder reads"
    )
    assert "broken CSV quoting" not in message and "quoting: false" in message
    skipped_and_counted(params, path, caplog, ["pos", "neg"])
    # A quote opened and never closed runs into the limit too: the message names its lines.
    runaway = write(tmp_path, "runaway.csv", 'text,label\n"good,pos\n' + "bad,neg\n" * 20_000)
    message = read_error(make_reader(**params), runaway)
    assert re.match(rf"{re.escape(runaway)}, line 2: a field on lines 2-\d+ is longer", message)
    assert "opened and not closed" in message
    # MultiNLI's CSV files too (its reader ended in a bare `_csv.Error`).
    mnli = write(tmp_path, "dev.csv", f"sentence1,sentence2,label\na,b,neutral\n{huge},b,neutral\n")
    assert task_reader_error("mnli", mnli).startswith(
        f"{mnli}, line 3: a field on line 3 is longer than Python's CSV field limit"
    )
