"""The readers on the real files (../shared/data or TUNE_DATA_DIR): the published counts.

Skipped when the data is absent. Test splits are never read here.
"""

import copy

import pytest
from allennlp.common import Params
from allennlp.data import DatasetReader

import allennlp_tune  # noqa: F401
from allennlp_tune.data.dataset_readers.conll2003 import iob1_to_iob2

pytestmark = pytest.mark.real_data
WHITESPACE = {"type": "whitespace"}  # fast; the counts do not depend on the tokenizer


def count(real_data, params: dict, path: str) -> int:
    reader = DatasetReader.from_params(Params(copy.deepcopy(params)))
    return sum(1 for _ in reader.read(str(real_data / path)))


@pytest.mark.parametrize(
    "params, path, expected",
    [
        ({"type": "sick", "split": "train"}, "sick/SICK.txt", 4439),
        ({"type": "sick", "split": "trial", "task": "relatedness"}, "sick/SICK.txt", 495),
        ({"type": "mrpc"}, "mrpc/msr_paraphrase_train.txt", 4076),
        ({"type": "mrpc"}, "mrpc/glue/dev.tsv", 408),
        ({"type": "sts_b"}, "sts-b/sts-train.csv", 5749),
        ({"type": "sts_b"}, "sts-b/sts-dev.csv", 1500),
        ({"type": "sts_b"}, "sts-b/glue/train.tsv", 5749),
        ({"type": "sts_b"}, "sts-b/glue/dev.tsv", 1500),
        ({"type": "mnli"}, "mnli/multinli_1.0_dev_matched.csv", 9815),
        ({"type": "mnli"}, "mnli/multinli_1.0_dev_mismatched.csv", 9832),
        ({"type": "sst2"}, "sst-2/train.tsv", 67349),
        ({"type": "sst2"}, "sst-2/dev.tsv", 872),
        ({"type": "cola"}, "cola/in_domain_train.tsv", 8551),
        ({"type": "cola"}, "cola/in_domain_dev.tsv", 527),
    ],
)
def test_real_counts(real_data, params, path, expected):
    assert count(real_data, dict(params, tokenizer=WHITESPACE), path) == expected


def test_mrpc_glue_train_and_dev_from_the_release_file(real_data):
    ids = str(real_data / "mrpc/glue/dev_ids.tsv")
    path = "mrpc/glue/msr_paraphrase_train.txt"
    assert count(real_data, {"type": "mrpc", "ids_file": ids, "tokenizer": WHITESPACE}, path) == 408
    exclude = {"type": "mrpc", "ids_file": ids, "ids": "exclude", "tokenizer": WHITESPACE}
    assert count(real_data, exclude, path) == 3668


@pytest.mark.parametrize(
    "iob1_file, iob2_file, sentences",
    [("eng.train", "iob2/train.txt", 14041), ("eng.testa", "iob2/valid.txt", 3250)],
)
def test_conll2003_both_copies(real_data, iob1_file, iob2_file, sentences):
    read = lambda scheme, name: list(  # noqa: E731
        DatasetReader.from_params(Params({"type": "tune_conll2003", "coding_scheme": scheme})).read(
            str(real_data / "conll2003" / name)
        )
    )
    iob1, iob2 = read("IOB1", iob1_file), read("IOB2", iob2_file)
    assert len(iob1) == len(iob2) == sentences
    for instance in iob1 + iob2:
        assert instance["tokens"].tokens[0].text != "-DOCSTART-"
    # The IOB1 file converted to IOB2 is exactly the IOB2 copy.
    assert [iob1_to_iob2(i["tags"].labels) for i in iob1] == [i["tags"].labels for i in iob2]
    assert {t for i in iob2 for t in i["tags"].labels} == {
        "O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "B-MISC", "I-MISC"
    }  # fmt: skip
