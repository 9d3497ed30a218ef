"""Bad input: every kind names the file, the line and what was expected; skip_invalid logs."""

import logging
import re

import pytest
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import DatasetReader

import allennlp_tune  # noqa: F401

SICK_HEADER = (
    "pair_ID\tsentence_A\tsentence_B\tentailment_label\trelatedness_score\tentailment_AB\t"
    "entailment_BA\tsentence_A_original\tsentence_B_original\tsentence_A_dataset\t"
    "sentence_B_dataset\tSemEval_set"
)


def sick_row(a="A man plays", b="A man is playing", label="NEUTRAL", score="3.5", split="TRAIN"):
    return "\t".join(["1", a, b, label, score, "x", "x", a, b, "F", "F", split])


def read_all(reader_params: dict, path) -> list:
    if reader_params["type"] != "tune_conll2003":  # pre-tokenised: it takes no tokenizer
        reader_params = dict(reader_params, tokenizer={"type": "whitespace"})
    reader = DatasetReader.from_params(Params(reader_params))
    return list(reader.read(str(path)))


def write_sick(tmp_path, *rows) -> str:
    path = tmp_path / "SICK.txt"
    path.write_text("\r\n".join([SICK_HEADER, *rows]), encoding="utf-8")
    return path


# (reader, file name, file text, line number of the bad row, words the message must contain)
CASES = {
    "wrong column count": (
        {"type": "sick", "split": "train"},
        None,
        [sick_row(), "1\tonly three\tcolumns"],
        3,
        "found 3 tab-separated columns, expected 12",
    ),
    "unknown label": (
        {"type": "sick", "split": "train"},
        None,
        [sick_row(), sick_row(label="MAYBE")],
        3,
        "unknown entailment_label 'MAYBE', expected one of 'ENTAILMENT'",
    ),
    "non-numeric score": (
        {"type": "sick", "task": "relatedness", "split": "train"},
        None,
        [sick_row(score="high")],
        2,
        "relatedness_score 'high' is not a number",
    ),
    "out-of-range score": (
        {"type": "sts_b"},
        "sts-train.csv",
        ["g\tf\t2012\t1\t4.2\ta b\tc d", "g\tf\t2012\t2\t7.5\ta b\tc d"],
        2,
        "score 7.5 is outside the range [0.0, 5.0]",
    ),
    "empty sentence": (
        {"type": "mrpc"},
        "msr_paraphrase_train.txt",
        ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String", "1\t1\t2\tA sentence\t   "],
        2,
        "the #2 String is empty",
    ),
    "sst2 without tab": (
        {"type": "sst2"},
        "train.tsv",
        ["sentence\tlabel", "fine film\t1", "no label here"],
        3,
        "no tab found",
    ),
    "mnli missing header column": (
        {"type": "mnli"},
        "dev.csv",
        ["pairID,premise,hypothesis,label", "1,a,b,neutral"],
        1,
        "header lacks the column(s) sentence1, sentence2",
    ),
    "mnli bad json": (
        {"type": "mnli"},
        "dev.jsonl",
        ['{"sentence1": "a", "sentence2": "b", "gold_label": "neutral"}', "{not json"],
        2,
        "expected a JSON object",
    ),
    "cola unknown label": (
        {"type": "cola"},
        "in_domain_train.tsv",
        ["src\t1\t\tGood.", "src\t2\t\tBad label."],
        2,
        "unknown label '2'",
    ),
    "conll column count": (
        {"type": "tune_conll2003"},
        "eng.train",
        ["EU NNP I-NP I-ORG", "rejects VBZ I-VP", ""],
        1,
        "(line 2) found 3 space-separated columns, expected 4",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_row_names_file_and_line(tmp_path, case):
    params, name, rows, line, words = CASES[case]
    if name is None:
        path = write_sick(tmp_path, *rows)
    else:
        path = tmp_path / name
        path.write_text("\n".join(rows), encoding="utf-8")
    with pytest.raises(ConfigurationError) as error:
        read_all(params, path)
    message = str(error.value)
    assert f"{path}, line {line}:" in message
    assert words in message
    assert "skip_invalid" in message  # says how to go on


def test_skip_invalid_logs_each_row_and_the_total(tmp_path, caplog):
    path = write_sick(tmp_path, sick_row(), sick_row(label="MAYBE"), "too\tfew", sick_row())
    with caplog.at_level(logging.WARNING):
        instances = read_all({"type": "sick", "split": "train", "skip_invalid": True}, path)
    assert len(instances) == 2
    skipped = [r.getMessage() for r in caplog.records if "Skipping invalid row" in r.getMessage()]
    assert len(skipped) == 2
    assert f"{path}, line 3:" in skipped[0] and f"{path}, line 4:" in skipped[1]
    assert any(
        re.search(r"Skipped 2 invalid rows in .*SICK\.txt", r.getMessage()) for r in caplog.records
    )


def test_missing_file(tmp_path):
    with pytest.raises(
        ConfigurationError, match=r"does-not-exist\.tsv does not exist.*TUNE_DATA_DIR"
    ):
        read_all({"type": "cola"}, tmp_path / "does-not-exist.tsv")


def test_empty_file(tmp_path):
    path = tmp_path / "dev.tsv"
    path.write_text("")
    with pytest.raises(ConfigurationError, match=r"dev\.tsv is empty"):
        read_all({"type": "sst2"}, path)


def test_undecodable_bytes(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_bytes(b"sentence\tlabel\ngood\t1\nbad \xff\xfe bytes\t0\n")
    with pytest.raises(
        ConfigurationError, match=r"train\.tsv, line 3: bytes that are not valid utf-8"
    ):
        read_all({"type": "sst2"}, path)


def test_bad_config_values_are_configuration_errors():
    bad = [
        ({"type": "sick", "task": "similarity"}, "dataset_reader.task is 'similarity'"),
        ({"type": "sick", "split": "validation"}, "SICK split 'validation' is unknown"),
        ({"type": "mrpc", "ids": "only"}, "dataset_reader.ids is 'only'"),
        ({"type": "mrpc", "pair_encoding": "both"}, "pair_encoding is 'both'"),
        ({"type": "tune_conll2003", "coding_scheme": "BIO"}, "coding_scheme is 'BIO'"),
    ]
    for params, message in bad:
        with pytest.raises(ConfigurationError, match=re.escape(message)):
            DatasetReader.from_params(Params(params))
