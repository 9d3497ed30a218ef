"""`tune_table`: a user's own CSV / TSV / JSON-lines files, good and malformed."""

import copy
import json
import logging
import re
from pathlib import Path

import pytest
import torch
from allennlp.commands.train import train_model
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import DatasetReader
from allennlp.data.fields import LabelField, TensorField
from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor

import allennlp_tune  # noqa: F401
from allennlp_tune.data.paths import FIXTURE_MODELS_DIR
from allennlp_tune.predictors.tune_text_classifier import reads_pairs

BERT = str(FIXTURE_MODELS_DIR / "bert-uncased")
WHITESPACE = {"type": "whitespace"}
CSV_HEADER = {"kind": "classification", "header": True, "text": "review", "label": "sentiment"}
TSV_PAIR_SCORE = {
    "kind": "pair_regression",
    "header": False,
    "text": 1,
    "text_pair": 2,
    "label": 0,
    "score_range": [0, 5],
}
JSONL = {"kind": "classification", "text": "sentence", "label": "label", "labels": ["0", "1"]}


def make_reader(**params) -> DatasetReader:
    params.setdefault("tokenizer", WHITESPACE)
    # Params consumes the dicts it is given: pass copies of the shared settings.
    return DatasetReader.from_params(Params(copy.deepcopy({"type": "tune_table", **params})))


def write(tmp_path: Path, name: str, text, encoding: str = "utf-8") -> str:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding=encoding, newline="")
    return str(path)


def words(instance, field: str = "tokens"):
    return [token.text for token in instance[field].tokens]


# ----------------------------------------------------------------------------------------------
# Good files
# ----------------------------------------------------------------------------------------------
def test_csv_with_header_quoting_and_labels_from_the_training_file(tmp_path):
    train = write(
        tmp_path,
        "train.csv",
        "\ufeffid,review,sentiment\r\n"
        '1,"good, very good",pos\r\n'
        '2,"a ""quoted"" word",neg\r\n'
        "\r\n"  # an empty line is no row
        '3,"two\nlines",pos\r\n'
        "4,plain text,neg\r\n",
    )
    reader = make_reader(**CSV_HEADER, labels_file=train)
    instances = list(reader.read(train))
    assert [words(i) for i in instances] == [
        ["good,", "very", "good"],
        ["a", '"quoted"', "word"],
        ["two", "lines"],
        ["plain", "text"],
    ]
    assert [i["label"].label for i in instances] == ["pos", "neg", "pos", "neg"]
    assert set(instances[0].fields) == {"tokens", "label"}
    assert isinstance(instances[0]["label"], LabelField)
    assert not reads_pairs(reader)  # the predictor takes {"sentence": ...}


def test_tsv_without_header_by_index_quotes_are_text(tmp_path):
    path = write(tmp_path, "data.tsv", '1\tsay "hi\tx\n0\tbye\ty\n')
    reader = make_reader(kind="classification", header=False, text=1, label=0, labels=[0, 1])
    instances = list(reader.read(path))
    assert [words(i) for i in instances] == [["say", '"hi'], ["bye"]]
    assert [i["label"].label for i in instances] == ["1", "0"]


def test_json_lines_and_explicit_format_wins_over_the_extension(tmp_path):
    rows = [{"sentence": "a fine film", "label": 1, "id": 7}, {"sentence": "dull", "label": "0"}]
    path = write(tmp_path, "data.txt", "\n".join(json.dumps(r) for r in rows) + "\n\n")
    instances = list(make_reader(**JSONL, format="jsonl").read(path))
    assert [words(i) for i in instances] == [["a", "fine", "film"], ["dull"]]
    assert [i["label"].label for i in instances] == ["1", "0"]
    # The same rows as a .jsonl file need no format; a .tsv read as jsonl follows the format.
    jsonl = write(tmp_path, "data.jsonl", (tmp_path / "data.txt").read_text())
    assert len(list(make_reader(**JSONL).read(jsonl))) == 2
    tsv = write(tmp_path, "data.tsv", (tmp_path / "data.txt").read_text())
    assert len(list(make_reader(**JSONL, format="jsonl").read(tsv))) == 2


def test_pair_regression_with_range_gives_float_labels(tmp_path):
    path = write(tmp_path, "sts.tsv", "3.5\tA man plays\tA man is playing\n0\tx\ty\n5\ta\tb\n")
    reader = make_reader(**TSV_PAIR_SCORE)
    instances = list(reader.read(path))
    assert [set(i.fields) for i in instances] == [{"premise", "hypothesis", "label"}] * 3
    assert words(instances[0], "premise") == ["A", "man", "plays"]
    assert words(instances[0], "hypothesis") == ["A", "man", "is", "playing"]
    assert isinstance(instances[0]["label"], TensorField)
    assert [float(i["label"].tensor) for i in instances] == [3.5, 0.0, 5.0]
    assert instances[0]["label"].tensor.dtype == torch.float32
    assert reads_pairs(reader)  # the predictor takes {"premise": ..., "hypothesis": ...}


def test_a_pair_kind_builds_the_pair_reader_and_each_class_refuses_the_others_kinds(tmp_path):
    from allennlp_tune.data.dataset_readers import TuneTablePairReader, TuneTableReader

    # A config names one type for every kind; the pair kinds get the pair class, by name too.
    assert type(make_reader(**TSV_PAIR_SCORE)) is TuneTablePairReader
    assert type(make_reader(**CSV_HEADER, labels=["a", "b"])) is TuneTableReader
    params = Params({"type": "tune_table_pair", **copy.deepcopy(TSV_PAIR_SCORE)})
    assert type(DatasetReader.from_params(params)) is TuneTablePairReader
    # From Python, each class reads its own kinds and names the other for the rest.
    single = {k: v for k, v in TSV_PAIR_SCORE.items() if k not in ("kind", "text_pair")}
    with pytest.raises(ConfigurationError, match="'pair_regression' is read by TuneTablePair"):
        TuneTableReader(**TSV_PAIR_SCORE)
    with pytest.raises(ConfigurationError, match="'regression' is read by TuneTableReader, not"):
        TuneTablePairReader(kind="regression", **single)
    pair = TuneTablePairReader(**TSV_PAIR_SCORE)
    path = write(tmp_path, "sts.tsv", "3.5\tA man plays\tA man is playing\n")
    assert [set(i.fields) for i in pair.read(path)] == [{"premise", "hypothesis", "label"}]


def test_single_regression_csv(tmp_path):
    path = write(tmp_path, "s.csv", "text,score\nnice,4.5\nbad,-1e0\n")
    instances = list(
        make_reader(kind="regression", header=True, text="text", label="score").read(path)
    )
    assert [float(i["label"].tensor) for i in instances] == [4.5, -1.0]


def test_pair_classification_joint_and_separate_with_bert(tmp_path):
    path = write(tmp_path, "p.jsonl", json.dumps({"a": "a cat", "b": "an animal", "y": "yes"}))
    params = {"kind": "pair_classification", "text": "a", "text_pair": "b", "label": "y"}
    bert = {"type": "pretrained_transformer", "model_name": BERT}
    joint = make_reader(**params, labels=["yes", "no"], tokenizer=bert)
    (instance,) = joint.read(path)
    assert set(instance.fields) == {"tokens", "label"}
    tokens = instance["tokens"].tokens
    texts = [t.text for t in tokens]
    assert texts[:4] == ["[CLS]", "a", "cat", "[SEP]"] and texts[-1] == "[SEP]"
    assert texts.count("[SEP]") == 2 and "an" in texts[4:]
    assert [t.type_id for t in tokens] == [0] * 4 + [1] * (len(tokens) - 4)
    separate = make_reader(**params, labels=["yes", "no"], tokenizer=bert, pair_encoding="separate")
    (instance,) = separate.read(path)
    assert words(instance, "premise") == ["[CLS]", "a", "cat", "[SEP]"]
    hypothesis = words(instance, "hypothesis")
    assert hypothesis[:2] == ["[CLS]", "an"] and hypothesis[-1] == "[SEP]"


def test_single_sentence_instances_equal_the_sst2_readers(tmp_path):
    """Same tokens (BERT's [CLS] ... [SEP] kept) and label as the built-in `sst2` reader."""
    text = "sentence\tlabel\na dull , boring mess\t0\na charming and funny film\t1\n"
    path = write(tmp_path, "train.tsv", text)
    bert = {"type": "pretrained_transformer", "model_name": BERT}
    ours = make_reader(
        kind="classification", header=True, text="sentence", label="label", labels=["0", "1"]
    )
    ours_bert = make_reader(
        kind="classification",
        header=True,
        text="sentence",
        label="label",
        labels=["0", "1"],
        tokenizer=bert,
    )
    sst2 = DatasetReader.from_params(Params({"type": "sst2", "tokenizer": bert}))
    for mine, theirs in zip(ours_bert.read(path), sst2.read(path)):
        assert set(mine.fields) == set(theirs.fields)
        assert words(mine) == words(theirs) and words(mine)[0] == "[CLS]"
        assert mine["label"].label == theirs["label"].label
    assert len(list(ours.read(path))) == 2


def test_labels_file_is_read_before_any_other_file(tmp_path):
    """A fresh reader (`evaluate`) that reads the test file first still knows the label set."""
    train = write(tmp_path, "train.csv", "review,sentiment\ngood,pos\nbad,neg\nok,pos\n")
    test = write(tmp_path, "test.csv", "review,sentiment\nfine,pos\nhmm,neutral\n")
    reader = make_reader(**CSV_HEADER, labels_file=train)
    with pytest.raises(ConfigurationError) as error:
        list(reader.read(test))
    message = str(error.value)
    assert f"{test}, line 3: unknown label (column 'sentiment') 'neutral'" in message
    assert "expected one of 'neg', 'pos'" in message and str(train) in message


def test_skip_invalid_logs_each_row_and_the_total(tmp_path, caplog):
    path = write(
        tmp_path,
        "t.csv",
        "review,sentiment\ngood,pos\n,neg\nbad,maybe\nfine,pos,extra\nnice,neg\n",
    )
    reader = make_reader(**CSV_HEADER, labels=["pos", "neg"], skip_invalid=True)
    with caplog.at_level(logging.WARNING):
        instances = list(reader.read(path))
    assert [words(i) for i in instances] == [["good"], ["nice"]]
    skipped = [r.getMessage() for r in caplog.records if "Skipping invalid row" in r.getMessage()]
    assert [re.search(r"line (\d+)", m).group(1) for m in skipped] == ["3", "4", "5"]
    assert any("Skipped 3 invalid rows" in r.getMessage() for r in caplog.records)


def test_a_skipped_row_is_said_once_per_process_until_the_file_changes(tmp_path, caplog):
    path = write(tmp_path, "t.csv", "review,sentiment\ngood,pos\n,neg\nnice,neg\n")

    def said() -> list:
        caplog.clear()
        reader = make_reader(**CSV_HEADER, labels=["pos", "neg"], skip_invalid=True)
        with caplog.at_level(logging.WARNING):
            assert [words(i) for i in reader.read(path)] == [["good"], ["nice"]]
        return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]

    first = said()
    assert first == [
        f"Skipping invalid row: {path}, line 3: the text (column 'review') is empty",
        f"Skipped 1 invalid rows in {path} (skip_invalid: true).",
    ]
    assert said() == []  # another reader, the same file: already said
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(",pos\n")
    assert said() == [
        f"Skipping invalid row: {path}, line 3: the text (column 'review') is empty",
        f"Skipping invalid row: {path}, line 5: the text (column 'review') is empty",
        f"Skipped 2 invalid rows in {path} (skip_invalid: true).",
    ]


# ----------------------------------------------------------------------------------------------
# Malformed files: the error names the file, the line and what was expected
# ----------------------------------------------------------------------------------------------
SCORE_CSV = {"kind": "regression", "header": True, "text": "t", "label": "s", "score_range": [0, 5]}

# (reader settings, file name, file content, line of the error, words the message must contain)
MALFORMED = {
    "wrong column count (header)": (
        dict(CSV_HEADER, labels=["pos", "neg"]),
        "d.csv",
        "review,sentiment\ngood,pos\ngood,movie,pos\n",
        3,
        "found 3 comma-separated columns, expected 2 (in the header row)",
    ),
    "wrong column count (no header)": (
        {"kind": "classification", "header": False, "text": 0, "label": 1, "labels": ["0", "1"]},
        "d.tsv",
        "fine\t1\nnice\tfilm\t0\n",
        2,
        "found 3 tab-separated columns, expected 2 (as on line 1, the first row)",
    ),
    "missing column name": (
        dict(CSV_HEADER, labels=["pos", "neg"]),
        "d.csv",
        "text,sentiment\ngood,pos\n",
        1,
        "the header row has no column named 'review' (dataset_reader.text)",
    ),
    "header true on a file without one": (
        dict(CSV_HEADER, labels=["pos", "neg"]),
        "d.csv",
        "good,pos\nbad,neg\n",
        1,
        "the header row has no column named 'review'",
    ),
    "header read as data (labels)": (
        {"kind": "classification", "header": False, "text": 0, "label": 1, "labels": ["0", "1"]},
        "d.csv",
        "sentence,label\ngood,1\n",
        1,
        "unknown label (column 1) 'label'",
    ),
    "header read as data (regression)": (
        {"kind": "regression", "header": False, "text": 0, "label": 1},
        "d.tsv",
        "sentence\tscore\ngood\t1\n",
        1,
        "the label (column 1) 'score' is not a number. Is this first row a header?",
    ),
    "non-numeric score": (
        SCORE_CSV,
        "d.csv",
        "t,s\ngood,1\nbad,high\n",
        3,
        "the label (column 's') 'high' is not a number",
    ),
    "out-of-range score": (
        SCORE_CSV,
        "d.csv",
        "t,s\ngood,1\nbad,5.5\n",
        3,
        "the label (column 's') 5.5 is outside dataset_reader.score_range [0, 5]",
    ),
    "nan score": (
        {"kind": "regression", "header": True, "text": "t", "label": "s"},
        "d.csv",
        "t,s\ngood,nan\n",
        2,
        "'nan' is not a finite number",
    ),
    "empty text": (
        dict(CSV_HEADER, labels=["pos", "neg"]),
        "d.csv",
        'review,sentiment\ngood,pos\n"",neg\n',
        3,
        "the text (column 'review') is empty",
    ),
    "blank second text": (
        dict(TSV_PAIR_SCORE),
        "d.tsv",
        "1\ta\t   \n",
        1,
        "the text_pair (column 2) is empty",
    ),
    "empty label": (
        dict(CSV_HEADER, labels=["pos", "neg"]),
        "d.csv",
        "review,sentiment\ngood,\n",
        2,
        "the label (column 'sentiment') is empty",
    ),
    "bad JSON line": (
        JSONL,
        "d.jsonl",
        '{"sentence": "ok", "label": 1}\n{"sentence": "broken", "label": 1\n',
        2,
        "not valid JSON (Expecting ',' delimiter at column",
    ),
    "JSON line not an object": (
        JSONL,
        "d.jsonl",
        '["ok", 1]\n',
        1,
        "a JSON array, expected one JSON object a line",
    ),
    "missing JSON key": (
        JSONL,
        "d.jsonl",
        '{"sentence": "ok", "label": 1}\n{"text": "no", "label": 0}\n',
        2,
        "no key 'sentence' (dataset_reader.text); the object's keys are ['label', 'text']",
    ),
    "JSON text not a string": (
        JSONL,
        "d.jsonl",
        '{"sentence": 12, "label": 1}\n',
        1,
        "the text (key 'sentence') holds a JSON number, expected a string",
    ),
    "JSON float class label": (
        JSONL,
        "d.jsonl",
        '{"sentence": "ok", "label": 1.0}\n',
        1,
        "the label (key 'label') holds a JSON number, expected a string or an integer",
    ),
    "undecodable bytes": (
        dict(CSV_HEADER, labels=["pos", "neg"]),
        "d.csv",
        b"review,sentiment\ngood,pos\nna\xefve,neg\n",
        3,
        "bytes that are not valid utf-8",
    ),
    "broken CSV quoting": (
        dict(CSV_HEADER, labels=["pos", "neg"]),
        "d.csv",
        'review,sentiment\ngood,pos\n"bad" movie,neg\nfine,pos\n',
        3,
        "broken CSV quoting on line 3",
    ),
    "quote never closed": (
        dict(CSV_HEADER, labels=["pos", "neg"], skip_invalid=True),  # an error all the same
        "d.csv",
        'review,sentiment\ngood,pos\n"bad,neg\nfine,pos\n',
        3,
        "a quoted field starts on line 3 and is never closed",
    ),
    "column index out of range": (
        {"kind": "classification", "header": False, "text": 0, "label": 2, "labels": ["0", "1"]},
        "d.tsv",
        "good\t1\n",
        1,
        "dataset_reader.label is column 2, but the first row has 2 tab-separated columns",
    ),
    "a record merged by a stray quote": (
        dict(CSV_HEADER, labels=["pos", "neg"]),
        "d.csv",
        'review,sentiment\n"good,pos\nbad",neg,x\n',
        2,
        "found 3 comma-separated columns, expected 2 (in the header row) (the record spans "
        "lines 2-3)",
    ),
}


@pytest.mark.parametrize("case", MALFORMED, ids=list(MALFORMED))
def test_malformed_file_names_the_file_and_line(case, tmp_path):
    settings, name, content, line, expected = MALFORMED[case]
    path = write(tmp_path, name, content)
    with pytest.raises(ConfigurationError) as error:
        list(make_reader(**settings).read(path))
    message = str(error.value)
    assert message.startswith(f"{path}, line {line}: "), message
    assert expected in message, message


def test_unknown_label_in_the_validation_file(tmp_path):
    train = write(tmp_path, "train.jsonl", '{"s": "a", "y": "x"}\n{"s": "b", "y": "z"}\n')
    dev = write(tmp_path, "dev.jsonl", '{"s": "a", "y": "x"}\n{"s": "c", "y": "w"}\n')
    reader = make_reader(kind="classification", text="s", label="y", labels_file=train)
    assert len(list(reader.read(train))) == 2
    with pytest.raises(ConfigurationError, match=re.escape(f"{dev}, line 2: unknown label")):
        list(reader.read(dev))


def test_header_read_as_data_in_the_labels_file(tmp_path):
    train = write(tmp_path, "train.csv", "text,label\ngood,pos\nbad,neg\nfine,pos\nugh,neg\n")
    reader = make_reader(kind="classification", header=False, text=0, label=1, labels_file=train)
    with pytest.raises(ConfigurationError) as error:
        list(reader.read(train))
    message = str(error.value)
    assert message.startswith(f"{train}, line 1: the label 'label' of the first row occurs")
    assert "Set header: true" in message


def test_labels_file_with_one_label(tmp_path):
    train = write(tmp_path, "train.csv", "t,y\ngood,pos\nfine,pos\n")
    reader = make_reader(kind="classification", header=True, text="t", label="y", labels_file=train)
    with pytest.raises(ConfigurationError, match="has only the label 'pos'"):
        list(reader.read(train))


def test_empty_and_missing_files(tmp_path):
    reader = make_reader(**CSV_HEADER, labels=["pos", "neg"])
    empty = write(tmp_path, "empty.csv", "")
    with pytest.raises(ConfigurationError, match=re.escape(f"{empty} is empty")):
        list(reader.read(empty))
    with pytest.raises(ConfigurationError, match="does not exist"):
        list(reader.read(str(tmp_path / "missing.csv")))


def test_unknown_extension_needs_format(tmp_path):
    path = write(tmp_path, "data.txt", "review,sentiment\ngood,pos\n")
    with pytest.raises(ConfigurationError, match=r"from its extension '\.txt': set dataset_reader"):
        list(make_reader(**CSV_HEADER, labels=["pos", "neg"]).read(path))


def test_header_setting_is_required_for_a_csv_named_by_extension(tmp_path):
    path = write(tmp_path, "data.csv", "review,sentiment\ngood,pos\n")
    reader = make_reader(
        kind="classification", text="review", label="sentiment", labels=["pos", "x"]
    )
    with pytest.raises(ConfigurationError, match=r"\(from its extension\) is CSV: set dataset_"):
        list(reader.read(path))


# ----------------------------------------------------------------------------------------------
# Settings
# ----------------------------------------------------------------------------------------------
BAD_SETTINGS = {
    "unknown kind": ({"kind": "ranking"}, "dataset_reader.kind is 'ranking'"),
    "pair kind without text_pair": (
        {"kind": "pair_classification"},
        "reads sentence pairs: set text_pair",
    ),
    "text_pair with a single kind": ({"text_pair": "b"}, "use kind 'pair_classification'"),
    "no label set": ({"labels": None}, "Neither is set"),
    "two label sets": ({"labels_file": "train.csv"}, "Both are set"),
    "one label": ({"labels": ["pos"]}, "at least 2 labels"),
    "repeated label": ({"labels": ["pos", "pos", "neg"]}, "lists ['pos'] more than once"),
    "labels for a regression": ({"kind": "regression"}, "labels / labels_file are for"),
    "score_range for classification": ({"score_range": [0, 5]}, "score_range is for the regr"),
    "bad score_range": (
        {"kind": "regression", "labels": None, "score_range": [5, 0]},
        "low < high",
    ),
    "pair_encoding for a single kind": ({"pair_encoding": "joint"}, "pair kinds only"),
    "same column twice": ({"label": "review"}, "name the same column twice"),
    "unknown format": ({"format": "xlsx"}, "format is 'xlsx'"),
    "CSV without header setting": ({"format": "csv", "header": None}, "set dataset_reader.header"),
    "header true with indices": ({"text": 0, "label": 1}, "must all be names"),
    "header false with names": ({"header": False}, "must all be integers >= 0"),
    "JSON-lines with header": ({"format": "jsonl"}, "header and quoting apply to CSV/TSV only"),
    "JSON-lines with indices": (
        {"format": "jsonl", "header": None, "text": 0, "label": 1},
        "must all be key names",
    ),
}


@pytest.mark.parametrize("case", BAD_SETTINGS, ids=list(BAD_SETTINGS))
def test_bad_settings(case):
    change, expected = BAD_SETTINGS[case]
    settings = dict(CSV_HEADER, format="csv", labels=["pos", "neg"])
    settings.update(change)
    settings = {key: value for key, value in settings.items() if value is not None}
    with pytest.raises(ConfigurationError, match=re.escape(expected)):
        make_reader(**settings)


# ----------------------------------------------------------------------------------------------
# A model trains on it
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["classification", "pair_regression"])
def test_pooled_classifier_trains_on_a_table(kind, tmp_path):
    torch.set_num_threads(1)
    if kind == "classification":
        rows = 'review,sentiment\na great film,pos\na dull mess,neg\n"funny, warm",pos\nbad,neg\n'
        train = write(tmp_path, "train.csv", rows)
        dev = write(tmp_path, "dev.csv", rows)
        reader = dict(CSV_HEADER, labels_file=train)
        model, metric, query = {}, "accuracy", {"sentence": "a warm film"}
    else:
        rows = "4.5\ta man plays\ta man is playing\n0.5\ta cat\ta car\n3\tit is\tit was\n"
        train = write(tmp_path, "train.tsv", rows)
        dev = write(tmp_path, "dev.tsv", rows)
        reader = dict(TSV_PAIR_SCORE)
        model, metric = {"regression": True}, "pearson"
        query = {"premise": "a man plays", "hypothesis": "a cat"}
    params = Params(
        {
            "dataset_reader": {
                "type": "tune_table",
                **reader,
                "tokenizer": {"type": "pretrained_transformer", "model_name": BERT},
                "token_indexers": {
                    "tokens": {"type": "pretrained_transformer", "model_name": BERT}
                },
            },
            "train_data_path": train,
            "validation_data_path": dev,
            "model": {
                "type": "pooled_classifier",
                "text_field_embedder": {
                    "token_embedders": {
                        "tokens": {
                            "type": "pretrained_transformer",
                            "model_name": BERT,
                            "train_parameters": True,
                        }
                    }
                },
                "pooling": "cls",
                **model,
            },
            "data_loader": {"batch_size": 4, "shuffle": False},
            "trainer": {
                "optimizer": {"type": "adam", "lr": 0.001},
                "num_epochs": 1,
                "cuda_device": -1,
                "validation_metric": f"+{metric}",
            },
        }
    )
    out = tmp_path / "run"
    train_model(params, str(out))
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["epoch"] == 0 and f"best_validation_{metric}" in metrics
    # The archive's reader (rebuilt from its config) drives the default predictor.
    predictor = Predictor.from_archive(load_archive(str(out / "model.tar.gz")))
    output = predictor.predict_json(query)
    if kind == "classification":
        assert output["label"] in {"pos", "neg"}
    else:
        assert isinstance(output["score"], float)
