"""Every reader on the fixture files (each real format), through `from_params` as a config does."""

import copy

import pytest
import torch
from allennlp.common import Params
from allennlp.data import DatasetReader
from allennlp.data.fields import LabelField, TensorField

import allennlp_tune  # noqa: F401  (registers the readers)
from allennlp_tune.data.dataset_readers.conll2003 import iob1_to_iob2
from allennlp_tune.data.paths import FIXTURE_DATA_DIR as DATA

WHITESPACE = {"type": "whitespace"}


def read(params: dict, path: str):
    reader = DatasetReader.from_params(Params(copy.deepcopy(params)))
    return list(reader.read(str(DATA / path)))


def texts(instance, field):
    return [t.text for t in instance[field].tokens]


def test_sick_entailment_reads_one_split_with_lower_cased_labels():
    train = read({"type": "sick", "split": "train"}, "sick/SICK.txt")
    trial = read({"type": "sick", "split": "trial"}, "sick/SICK.txt")
    assert (len(train), len(trial)) == (8, 4)
    assert {i["label"].label for i in train} == {"entailment", "neutral", "contradiction"}
    assert set(train[0].fields) == {"premise", "hypothesis", "label"}
    # CRLF: no token carries a carriage return.
    assert all("\r" not in t for i in train for t in texts(i, "hypothesis"))


def test_sick_split_in_path_overrides_parameter_and_relatedness_gives_floats():
    trial = read({"type": "sick", "task": "relatedness", "split": "train"}, "sick/SICK.txt#trial")
    assert len(trial) == 4
    scores = [i["label"] for i in trial]
    assert all(isinstance(s, TensorField) and s.tensor.dtype == torch.float32 for s in scores)
    assert all(1.0 <= float(s.tensor) <= 5.0 for s in scores)


def test_sick_without_a_split_is_a_configuration_error():
    with pytest.raises(Exception, match="No SICK split given"):
        read({"type": "sick"}, "sick/SICK.txt")


def test_mrpc_release_file_with_bom_and_glue_dev_split():
    train = read({"type": "mrpc", "tokenizer": WHITESPACE}, "mrpc/msr_paraphrase_train.txt")
    assert len(train) == 12
    assert not texts(train[0], "premise")[0].startswith("\ufeff")
    ids = str(DATA / "mrpc/glue/dev_ids.tsv")
    dev = read({"type": "mrpc", "ids_file": ids}, "mrpc/glue/msr_paraphrase_train.txt")
    rest = read(
        {"type": "mrpc", "ids_file": ids, "ids": "exclude"}, "mrpc/glue/msr_paraphrase_train.txt"
    )
    glue_dev = read({"type": "mrpc"}, "mrpc/glue/dev.tsv")
    assert (len(dev), len(rest)) == (3, 9)
    assert [texts(i, "premise") for i in dev] == [texts(i, "premise") for i in glue_dev]
    assert {i["label"].label for i in train} == {"0", "1"}


@pytest.mark.parametrize(
    "path, count",
    [("sts-b/sts-train.csv", 12), ("sts-b/glue/train.tsv", 12), ("sts-b/sts-dev.csv", 6)],
)
def test_sts_b_release_and_glue_formats(path, count):
    instances = read({"type": "sts_b", "tokenizer": WHITESPACE}, path)
    assert len(instances) == count
    # Row 1 holds an unbalanced quote: read literally, not as a quoted field.
    assert texts(instances[1], "premise")[:3] == ["He", "said", '"no']
    assert all(0.0 <= float(i["label"].tensor) <= 5.0 for i in instances)


def test_sts_b_release_and_glue_copies_agree():
    release = read({"type": "sts_b"}, "sts-b/sts-train.csv")
    glue = read({"type": "sts_b"}, "sts-b/glue/train.tsv")
    assert [float(i["label"].tensor) for i in release] == [float(i["label"].tensor) for i in glue]
    assert [texts(i, "hypothesis") for i in release] == [texts(i, "hypothesis") for i in glue]


@pytest.mark.parametrize(
    "path, count",
    [
        ("mnli/multinli_1.0_dev_matched.csv", 8),  # 10 rows, 2 without a gold label
        ("mnli/multinli_1.0_dev_matched.jsonl", 6),  # 8 rows, 2 without
        ("mnli/dev_matched.tsv", 6),
    ],
)
def test_mnli_formats_drop_rows_without_gold_label(path, count):
    instances = read({"type": "mnli", "tokenizer": WHITESPACE}, path)
    assert len(instances) == count
    assert {i["label"].label for i in instances} <= {"entailment", "neutral", "contradiction"}


def test_mnli_csv_quoted_field_keeps_its_comma_and_quotes():
    instances = read({"type": "mnli", "tokenizer": WHITESPACE}, "mnli/multinli_1.0_dev_matched.csv")
    assert texts(instances[2], "premise")[-5:] == ["beach,", '"quoted"', "and", "with", "a"] or (
        '"quoted"' in texts(instances[2], "premise")
    )


@pytest.mark.parametrize("path, count", [("sst-2/train.tsv", 12), ("sst-2/sentiment-test", 6)])
def test_sst2_glue_and_senteval_formats(path, count):
    instances = read({"type": "sst2", "tokenizer": WHITESPACE}, path)
    assert len(instances) == count
    assert set(instances[0].fields) == {"tokens", "label"}
    assert {i["label"].label for i in instances} == {"0", "1"}
    assert all(texts(i, "tokens")[-1] != "" for i in instances)


def test_cola_raw_format():
    instances = read({"type": "cola"}, "cola/in_domain_train.tsv")
    assert len(instances) == 12
    assert [i["label"].label for i in instances][:3] == ["0", "1", "1"]
    assert isinstance(instances[0]["label"], LabelField)


def test_conll2003_iob1_with_docstart_at_end_and_iob2_copies_agree():
    iob1 = read({"type": "tune_conll2003", "coding_scheme": "IOB1"}, "conll2003/eng.train")
    iob2 = read({"type": "tune_conll2003", "coding_scheme": "IOB2"}, "conll2003/iob2/train.txt")
    assert len(iob1) == len(iob2) == 10
    assert all("-DOCSTART-" not in texts(i, "tokens") for i in iob1 + iob2)
    assert [iob1_to_iob2(i["tags"].labels) for i in iob1] == [i["tags"].labels for i in iob2]
    converted = read(
        {"type": "tune_conll2003", "coding_scheme": "IOB1", "convert_to_coding_scheme": "IOB2"},
        "conll2003/eng.train",
    )
    assert [i["tags"].labels for i in converted] == [i["tags"].labels for i in iob2]
    bioul1 = read(
        {"type": "tune_conll2003", "coding_scheme": "IOB1", "convert_to_coding_scheme": "BIOUL"},
        "conll2003/eng.train",
    )
    bioul2 = read(
        {"type": "tune_conll2003", "coding_scheme": "IOB2", "convert_to_coding_scheme": "BIOUL"},
        "conll2003/iob2/train.txt",
    )
    assert [i["tags"].labels for i in bioul1] == [i["tags"].labels for i in bioul2]


def test_conll2003_wrong_scheme_is_reported_with_the_fix():
    with pytest.raises(Exception, match=r"eng\.train, line 1: .*Is this an IOB1 file"):
        read({"type": "tune_conll2003", "coding_scheme": "IOB2"}, "conll2003/eng.train")
    with pytest.raises(Exception, match=r"train\.txt, line 3: .*Is this an IOB2 file"):
        read({"type": "tune_conll2003", "coding_scheme": "IOB1"}, "conll2003/iob2/train.txt")


def test_word_level_pair_reader_refuses_joint_encoding():
    with pytest.raises(Exception, match="pair_encoding 'joint' needs a 'pretrained_transformer'"):
        DatasetReader.from_params(Params({"type": "mrpc", "pair_encoding": "joint"}))


def test_max_instances_and_default_tokenizer_split_punctuation():
    instances = read({"type": "mnli", "max_instances": 3}, "mnli/multinli_1.0_dev_matched.csv")
    assert len(instances) == 3
    assert '"' in texts(instances[2], "premise") and "," in texts(instances[2], "premise")
