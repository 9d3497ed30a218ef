"""
Input the readers used to accept silently: CoNLL-2003 entity types outside the task's four, a
-DOCSTART- line inside a sentence, files that yield no instance at all, `max_instances: 0`, and
texts made only of zero-width characters.
"""

import copy
import logging
import re
import sys

import pytest
from allennlp.commands import main as allennlp_main
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import DatasetReader

import allennlp_tune  # noqa: F401
from allennlp_tune.data.dataset_readers.task_reader import is_blank
from allennlp_tune.data.paths import FIXTURE_DATA_DIR, FIXTURE_MODELS_DIR, REPO_ROOT

SICK_HEADER = (
    "pair_ID\tsentence_A\tsentence_B\tentailment_label\trelatedness_score\tentailment_AB\t"
    "entailment_BA\tsentence_A_original\tsentence_B_original\tsentence_A_dataset\t"
    "sentence_B_dataset\tSemEval_set"
)


def sick_row(a="A man plays", b="A man is playing", split="TRAIN") -> str:
    return "\t".join(["1", a, b, "NEUTRAL", "3.5", "x", "x", a, b, "F", "F", split])


def reader_for(params: dict) -> DatasetReader:
    if params["type"] != "tune_conll2003":
        params = dict(params, tokenizer={"type": "whitespace"})
    return DatasetReader.from_params(Params(copy.deepcopy(params)))


def read_all(params: dict, path) -> list:
    return list(reader_for(params).read(str(path)))


def write(tmp_path, name: str, *lines: str):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# ---- CoNLL-2003: entity types ------------------------------------------------------------------

CONLL_FOO = ["EU NNP I-NP I-ORG", "rejects VBZ I-VP O", "Foo NNP I-NP I-FOO", ""]
CONLL_GOOD = ["Peter NNP I-NP I-PER", "Blackburn NNP I-NP I-PER", ""]


def test_conll_unknown_entity_type_names_file_line_and_the_option(tmp_path):
    path = write(tmp_path, "eng.train", *CONLL_GOOD, *CONLL_FOO)
    with pytest.raises(ConfigurationError) as error:
        read_all({"type": "tune_conll2003"}, path)
    message = str(error.value)
    assert f"{path}, line 4:" in message  # the sentence
    assert "token 3 (line 6)" in message  # the token
    assert "entity type 'FOO', expected one of PER, LOC, ORG, MISC" in message
    assert "entity_types" in message and "skip_invalid" in message


def test_conll_entity_types_option_accepts_other_types_and_null(tmp_path):
    path = write(tmp_path, "eng.train", *CONLL_GOOD, *CONLL_FOO)
    own = read_all({"type": "tune_conll2003", "entity_types": ["PER", "ORG", "FOO"]}, path)
    assert [i["tags"].labels for i in own] == [["I-PER", "I-PER"], ["I-ORG", "O", "I-FOO"]]
    assert len(read_all({"type": "tune_conll2003", "entity_types": None}, path)) == 2
    # Types are checked with the new list too, and the chunk column is never type-checked.
    with pytest.raises(ConfigurationError, match="entity type 'PER', expected one of ORG, FOO"):
        read_all({"type": "tune_conll2003", "entity_types": ["ORG", "FOO"]}, path)


def test_conll_unknown_entity_type_is_skipped_and_counted_with_skip_invalid(tmp_path, caplog):
    path = write(tmp_path, "eng.train", *CONLL_GOOD, *CONLL_FOO)
    with caplog.at_level(logging.WARNING):
        instances = read_all({"type": "tune_conll2003", "skip_invalid": True}, path)
    assert [i["metadata"]["words"] for i in instances] == [["Peter", "Blackburn"]]
    assert any("Skipped 1 invalid rows" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    "entity_types", [[], "PER", ["B-PER"], ["PER", ""]], ids=["empty", "str", "prefix", "blank"]
)
def test_conll_bad_entity_types_setting(entity_types):
    with pytest.raises(ConfigurationError, match=r"dataset_reader\.entity_types is"):
        reader_for({"type": "tune_conll2003", "entity_types": entity_types})


# ---- CoNLL-2003: -DOCSTART- --------------------------------------------------------------------


def test_conll_docstart_inside_a_sentence_names_its_line(tmp_path):
    lines = ["-DOCSTART- -X- O O", "", "EU NNP I-NP I-ORG", "-DOCSTART- -X- O O", "", *CONLL_GOOD]
    path = write(tmp_path, "eng.train", *lines)
    with pytest.raises(ConfigurationError) as error:
        read_all({"type": "tune_conll2003"}, path)
    message = str(error.value)
    assert f"{path}, line 3: (line 4) -DOCSTART- inside a sentence" in message
    assert "line 3 is a token, not a blank line" in message


def test_conll_docstart_inside_a_sentence_is_skipped_with_skip_invalid(tmp_path):
    lines = ["EU NNP I-NP I-ORG", "-DOCSTART- -X- O O", "rejects VBZ I-VP O", "", *CONLL_GOOD]
    path = write(tmp_path, "eng.train", *lines)
    instances = read_all({"type": "tune_conll2003", "skip_invalid": True}, path)
    # The interrupted sentence is dropped whole, not split into two.
    assert [i["metadata"]["words"] for i in instances] == [["Peter", "Blackburn"]]


def test_conll_docstart_at_the_edges_of_sentences_is_a_document_boundary(tmp_path):
    # At the start of the file, after a blank line, directly before a sentence, at the very end.
    lines = [
        "-DOCSTART- -X- -X- O",
        "EU NNP B-NP B-ORG",
        "",
        "-DOCSTART- -X- -X- O",
        "",
        "Peter NNP B-NP B-PER",
        "",
        "-DOCSTART- -X- -X- O",
    ]
    path = write(tmp_path, "train.txt", *lines)
    instances = read_all({"type": "tune_conll2003", "coding_scheme": "IOB2"}, path)
    assert [i["metadata"]["words"] for i in instances] == [["EU"], ["Peter"]]


# ---- files that give no instance ---------------------------------------------------------------

MNLI_CSV_HEADER = "pairID,sentence1,sentence2,label"
MNLI_JSONL_NO_GOLD = '{"sentence1": "a", "sentence2": "b", "gold_label": "-"}'

# (reader, file name, lines, words the message must contain besides the file)
EMPTY_READS = {
    "sst2 header only": ({"type": "sst2"}, "train.tsv", ["sentence\tlabel"], "1 line(s), 1 of"),
    "mrpc header only": (
        {"type": "mrpc"},
        "msr_paraphrase_train.txt",
        ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"],
        "1 line(s), 1 of",
    ),
    "sts_b glue header only": (
        {"type": "sts_b"},
        "train.tsv",
        ["index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore"],
        "1 line(s), 1 of",
    ),
    "sick header only": ({"type": "sick", "split": "train"}, "SICK.txt", [SICK_HEADER], "split"),
    "sick no row of the split": (
        {"type": "sick", "split": "test"},
        "SICK.txt",
        [SICK_HEADER, sick_row(), sick_row(split="TRIAL")],
        "3 line(s), 3 of them ignored",
    ),
    "mnli csv header only": ({"type": "mnli"}, "dev.csv", [MNLI_CSV_HEADER], "(0 row(s))"),
    "mnli tsv header only": (
        {"type": "mnli"},
        "dev.tsv",
        ["gold_label\tsentence1\tsentence2"],
        "(0 row(s))",
    ),
    "mnli only '-' labels": (
        {"type": "mnli"},
        "dev.jsonl",
        [MNLI_JSONL_NO_GOLD, MNLI_JSONL_NO_GOLD],
        "(2 row(s), 2 of them ignored",
    ),
    "conll only docstart": (
        {"type": "tune_conll2003"},
        "eng.train",
        ["-DOCSTART- -X- O O", ""],
        "0 sentence(s)",
    ),
    "cola every row skipped": (
        {"type": "cola", "skip_invalid": True},
        "in_domain_dev.tsv",
        ["src\t2\t\tBad label.", "only two\tcolumns"],
        "2 invalid row(s) skipped",
    ),
}


@pytest.mark.parametrize("case", sorted(EMPTY_READS))
def test_a_file_without_instances_is_an_error_naming_it(tmp_path, case):
    params, name, lines, words = EMPTY_READS[case]
    path = write(tmp_path, name, *lines)
    with pytest.raises(ConfigurationError) as error:
        read_all(params, path)
    message = str(error.value)
    assert f"{path}: no instances read" in message
    assert words in message
    assert type(reader_for(params)).__name__ in message


def test_mrpc_ids_file_that_keeps_nothing_is_named(tmp_path):
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"
    path = write(tmp_path, "msr_paraphrase_train.txt", header, "1\t1\t2\tA b\tC d")
    ids = write(tmp_path, "dev_ids.tsv", "7\t8")
    with pytest.raises(ConfigurationError, match=re.escape(f"ids_file {ids}")):
        read_all({"type": "mrpc", "ids_file": str(ids)}, path)


@pytest.mark.parametrize(
    "params, path",
    [
        ({"type": "sst2"}, "sst-2/train.tsv"),
        ({"type": "sick", "split": "train"}, "sick/SICK.txt"),
        ({"type": "mnli"}, "mnli/multinli_1.0_dev_matched.csv"),
        ({"type": "tune_conll2003"}, "conll2003/eng.train"),
    ],
)
def test_max_instances_zero_is_an_error_naming_the_file_and_setting(params, path):
    with pytest.raises(ConfigurationError) as error:
        read_all(dict(params, max_instances=0), FIXTURE_DATA_DIR / path)
    message = str(error.value)
    assert f"Reading {FIXTURE_DATA_DIR / path}: dataset_reader.max_instances is 0" in message
    assert "TUNE_MAX_INSTANCES" in message
    # One instance is fine.
    assert len(read_all(dict(params, max_instances=1), FIXTURE_DATA_DIR / path)) == 1


def test_training_with_max_instances_zero_stops_at_the_reader(tmp_path, monkeypatch):
    """It used to end in a misleading "vocabulary has no labels ... set regression" error."""
    monkeypatch.setenv("TUNE_DATA_DIR", str(FIXTURE_DATA_DIR))
    monkeypatch.setenv("TUNE_BERT_MODEL", str(FIXTURE_MODELS_DIR / "bert-uncased"))
    monkeypatch.setenv("TUNE_MAX_INSTANCES", "")  # unset: the config default, all
    config = REPO_ROOT / "training_config" / "sst2_bert_ft.jsonnet"
    # (The configs refuse TUNE_MAX_INSTANCES=0 themselves; a user's own config or an override
    # reaches the reader.)
    overrides = '{"dataset_reader.max_instances": 0}'
    argv = ["allennlp", "train", str(config), "-s", str(tmp_path / "run"), "-o", overrides]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(ConfigurationError, match=r"train\.tsv: dataset_reader\.max_instances is 0"):
        allennlp_main(prog="allennlp")


# ---- zero-width texts --------------------------------------------------------------------------


def test_is_blank():
    assert is_blank("") and is_blank(" \t\u200b\u200b\ufeff\u200d ")
    assert not is_blank("\u200ba") and not is_blank("é")


def test_a_sentence_of_zero_width_characters_is_empty(tmp_path):
    path = write(tmp_path, "train.tsv", "sentence\tlabel", "fine\t1", "\u200b\u200b\t0")
    with pytest.raises(ConfigurationError) as error:
        read_all({"type": "sst2"}, path)
    message = str(error.value)
    assert f"{path}, line 3: the sentence is empty" in message
    assert "zero-width" in message
