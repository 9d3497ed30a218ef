"""`tune_columns`: a user's own token-per-line tagging files, good and malformed."""

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
from allennlp.data.tokenizers import Token
from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor

import allennlp_tune  # noqa: F401
from allennlp_tune.data.paths import FIXTURE_DATA_DIR, FIXTURE_MODELS_DIR

CONLL = {
    "separator": "whitespace",
    "token_column": 0,
    "tag_column": 3,
    "document_separator": "-DOCSTART-",
}
TAB = {"separator": "tab", "token_column": 1, "tag_column": 2, "coding_scheme": "IOB2"}

IOB1_FILE = (
    "-DOCSTART- -X- -X- O\n"
    "\n"
    "EU NNP B-NP I-ORG\n"
    "rejects VBZ B-VP O\n"
    "German JJ B-NP I-MISC\n"
    "\n"
    "-DOCSTART- -X- -X- O\n"
    "\n"
    "Peter NNP B-NP I-PER\n"
    "Blackburn NNP I-NP I-PER\n"
    "Paris NNP I-NP B-PER\n"  # IOB1: B- separates two adjacent spans of one type
)


def make_reader(**params) -> DatasetReader:
    # Params consumes the dicts it is given: pass copies of the shared settings.
    return DatasetReader.from_params(Params(copy.deepcopy({"type": "tune_columns", **params})))


def write(tmp_path: Path, name: str, text, encoding: str = "utf-8") -> str:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding=encoding, newline="")
    return str(path)


def read(path: str, **params):
    return [
        (instance["metadata"]["words"], instance["tags"].labels)
        for instance in make_reader(**params).read(path)
    ]


# ----------------------------------------------------------------------------------------------
# Good files
# ----------------------------------------------------------------------------------------------
def test_iob1_with_documents_as_read_and_converted(tmp_path):
    path = write(tmp_path, "eng.train", IOB1_FILE)
    assert read(path, **CONLL, coding_scheme="IOB1") == [
        (["EU", "rejects", "German"], ["I-ORG", "O", "I-MISC"]),
        (["Peter", "Blackburn", "Paris"], ["I-PER", "I-PER", "B-PER"]),
    ]
    iob2 = read(path, **CONLL, coding_scheme="IOB1", convert_to_coding_scheme="IOB2")
    assert [tags for _, tags in iob2] == [["B-ORG", "O", "B-MISC"], ["B-PER", "I-PER", "B-PER"]]
    bioul = read(path, **CONLL, coding_scheme="IOB1", convert_to_coding_scheme="BIOUL")
    assert [tags for _, tags in bioul] == [["U-ORG", "O", "U-MISC"], ["B-PER", "L-PER", "U-PER"]]


@pytest.mark.parametrize(
    "file_name, scheme",
    [("eng.train", "IOB1"), ("eng.testa", "IOB1"), ("iob2/train.txt", "IOB2")],
)
def test_same_instances_as_tune_conll2003(file_name, scheme):
    path = str(FIXTURE_DATA_DIR / "conll2003" / file_name)
    settings = {"coding_scheme": scheme, "convert_to_coding_scheme": "BIOUL"}
    ours = list(make_reader(**CONLL, **settings).read(path))
    conll = DatasetReader.from_params(Params({"type": "tune_conll2003", **settings}))
    theirs = list(conll.read(path))
    assert len(ours) == len(theirs) > 1
    for mine, reference in zip(ours, theirs):
        assert set(mine.fields) == set(reference.fields) == {"tokens", "tags", "metadata"}
        assert [t.text for t in mine["tokens"].tokens] == [
            t.text for t in reference["tokens"].tokens
        ]
        assert mine["tags"].labels == reference["tags"].labels
        assert mine["tags"]._label_namespace == reference["tags"]._label_namespace
        assert mine["metadata"].metadata == reference["metadata"].metadata


def test_tab_separated_iob2_tokens_with_spaces_crlf_and_no_final_blank_line(tmp_path):
    path = write(
        tmp_path,
        "data.tsv",
        "1\tNew York \tB-LOC\r\n2\tcity\tO\r\n \t\r\n1\tParis\tB-LOC\r\n2\tHilton\tI-LOC",
    )
    assert read(path, **TAB) == [
        (["New York", "city"], ["B-LOC", "O"]),
        (["Paris", "Hilton"], ["B-LOC", "I-LOC"]),
    ]


def test_bioul_file_and_conversion_to_iob2(tmp_path):
    path = write(tmp_path, "b.txt", "a U-X\nb O\nc B-Y\nd I-Y\ne L-Y\n")
    params = {"separator": "whitespace", "token_column": 0, "tag_column": 1}
    assert read(path, **params, coding_scheme="BIOUL") == [
        (["a", "b", "c", "d", "e"], ["U-X", "O", "B-Y", "I-Y", "L-Y"])
    ]
    assert read(path, **params, coding_scheme="BIOUL", convert_to_coding_scheme="IOB2") == [
        (["a", "b", "c", "d", "e"], ["B-X", "O", "B-Y", "I-Y", "I-Y"])
    ]


def test_plain_tags(tmp_path):
    path = write(tmp_path, "pos.txt", "The\tDT\ncat\tNN\n\nIt\tPRP\n")
    params = {"separator": "tab", "token_column": 0, "tag_column": 1, "coding_scheme": "none"}
    assert read(path, **params) == [(["The", "cat"], ["DT", "NN"]), (["It"], ["PRP"])]


def test_entity_types_allow_list(tmp_path):
    path = write(tmp_path, "e.txt", "EU B-ORG\nsaid O\n\nPeter B-PER\n")
    params = {"separator": "whitespace", "token_column": 0, "tag_column": 1}
    assert len(read(path, **params, coding_scheme="IOB2", entity_types=["PER", "ORG"])) == 2
    with pytest.raises(ConfigurationError) as error:
        read(path, **params, coding_scheme="IOB2", entity_types=["PER"])
    message = str(error.value)
    assert message.startswith(f"{path}, line 1: ") and "'B-ORG' of token 1 (line 1)" in message
    assert "expected one of PER" in message


def test_text_to_instance_for_the_predictor():
    reader = make_reader(**CONLL, coding_scheme="IOB1")
    instance = reader.text_to_instance([Token("EU"), Token("rejects")])
    assert set(instance.fields) == {"tokens", "metadata"}
    assert instance["metadata"]["words"] == ["EU", "rejects"]


def test_skip_invalid_logs_each_sentence_and_the_total(tmp_path, caplog):
    path = write(
        tmp_path,
        "s.txt",
        "a O\nb B-X\n\nc O\nd I-X\n\ne O\n\nf BAD-\n\ng O\n",
    )
    params = {"separator": "whitespace", "token_column": 0, "tag_column": 1}
    with caplog.at_level(logging.WARNING):
        sentences = read(path, **params, coding_scheme="IOB2", skip_invalid=True)
    assert sentences == [(["a", "b"], ["O", "B-X"]), (["e"], ["O"]), (["g"], ["O"])]
    skipped = [r.getMessage() for r in caplog.records if "Skipping invalid row" in r.getMessage()]
    assert [re.search(r", line (\d+)", m).group(1) for m in skipped] == ["4", "9"]
    assert any("Skipped 2 invalid rows" in r.getMessage() for r in caplog.records)


# ----------------------------------------------------------------------------------------------
# Malformed files: the error names the file, the sentence's first line and the bad line
# ----------------------------------------------------------------------------------------------
WS = {"separator": "whitespace", "token_column": 0, "tag_column": 1}

# (reader settings, file content, line the error starts with, words the message must contain)
MALFORMED = {
    "wrong column count": (
        dict(WS, coding_scheme="IOB2"),
        "a O\nb O\n\nc NN O\n",
        4,
        "(line 4) found 3 whitespace-separated columns, expected 2 as on line 1",
    ),
    "malformed tag": (
        dict(WS, coding_scheme="IOB2"),
        "a O\n\nb O\nc PER\n",
        3,
        "the tag 'PER' of token 2 (line 4) is not O, B-X or I-X",
    ),
    "IOB2 violation": (
        dict(WS, coding_scheme="IOB2"),
        "a O\nb I-PER\n",
        1,
        "the tag I-PER of token 2 (line 2) follows O, which IOB2 forbids",
    ),
    "IOB1 violation": (
        dict(WS, coding_scheme="IOB1"),
        "x O\n\na O\nb B-PER\n",
        3,
        "the tag B-PER of token 2 (line 4) follows O, which IOB1 forbids",
    ),
    "BIOUL span not ended": (
        dict(WS, coding_scheme="BIOUL"),
        "a B-PER\nb O\n",
        1,
        "tag O of token 2 (line 2) follows B-PER, which BIOUL forbids",
    ),
    "BIOUL sentence ends inside a span": (
        dict(WS, coding_scheme="BIOUL"),
        "a B-PER\nb I-PER\n",
        1,
        "the sentence ends inside a span: tag I-PER of its last token (line 2)",
    ),
    "BIOUL read as IOB2": (
        dict(WS, coding_scheme="IOB2"),
        "a U-PER\n",
        1,
        "the tag 'U-PER' of token 1 (line 1) is not O, B-X or I-X",
    ),
    "token column out of range": (
        dict(WS, token_column=2, coding_scheme="IOB2"),
        "a O\n",
        1,
        "dataset_reader.token_column is column 2, but the first token line has 2 whitespace-",
    ),
    "tag column out of range": (
        dict(WS, tag_column=3, coding_scheme="IOB2"),
        "a NN O\n",
        1,
        "dataset_reader.tag_column is column 3, but the first token line has 3",
    ),
    "DOCSTART inside a sentence": (
        dict(CONLL, coding_scheme="IOB1"),
        "EU NNP B-NP I-ORG\n-DOCSTART- -X- -X- O\n\nx NN B-NP O\n",
        1,
        "(line 2) the document separator '-DOCSTART-' must stand alone between blank lines, but "
        "line 1 beside it",
    ),
    "DOCSTART right before a sentence": (
        dict(CONLL, coding_scheme="IOB1"),
        "-DOCSTART- -X- -X- O\nEU NNP B-NP I-ORG\n",
        1,
        "(line 1) the document separator '-DOCSTART-' must stand alone between blank lines, but "
        "line 2 beside it",
    ),
    "DOCSTART without document_separator": (
        dict(CONLL, document_separator=None, coding_scheme="IOB1"),
        "-DOCSTART- -X- -X- O\n\nEU NNP B-NP I-ORG\n",
        1,
        "(line 1) -DOCSTART- separates documents in CoNLL files; set dataset_reader.document_",
    ),
    "empty token (tab)": (
        dict(TAB),
        "1\tEU\tB-ORG\n2\t \tO\n",
        1,
        "(line 2) the token (column 1) is empty",
    ),
    "empty tag (tab)": (
        dict(TAB),
        "1\tEU\t\n",
        1,
        "(line 1) the tag (column 2) is empty",
    ),
    "undecodable bytes": (
        dict(WS, coding_scheme="IOB2"),
        b"a O\n\nna\xefve O\n",
        3,
        "bytes that are not valid utf-8",
    ),
}


@pytest.mark.parametrize("case", MALFORMED, ids=list(MALFORMED))
def test_malformed_file_names_the_file_and_line(case, tmp_path):
    settings, content, line, expected = MALFORMED[case]
    path = write(tmp_path, "data.txt", content)
    with pytest.raises(ConfigurationError) as error:
        list(make_reader(**settings).read(path))
    message = str(error.value)
    assert message.startswith(f"{path}, line {line}: "), message
    assert expected in message, message


def test_empty_file(tmp_path):
    path = write(tmp_path, "empty.txt", "")
    with pytest.raises(ConfigurationError, match=re.escape(f"{path} is empty")):
        list(make_reader(**WS, coding_scheme="IOB2").read(path))


BAD_SETTINGS = {
    "unknown separator": ({"separator": ","}, "separator is ','"),
    "unknown scheme": ({"coding_scheme": "BILOU"}, "coding_scheme is 'BILOU'"),
    "conversion of plain tags": (
        {"coding_scheme": "none", "convert_to_coding_scheme": "IOB2"},
        "with coding_scheme 'none' expected one of null",
    ),
    "unknown conversion": ({"convert_to_coding_scheme": "IOB1"}, "expected one of null, 'IOB2'"),
    "same column twice": ({"tag_column": 0}, "are both 0"),
    "negative column": ({"token_column": -1}, "token_column is -1"),
    "entity types with plain tags": (
        {"coding_scheme": "none", "entity_types": ["PER"]},
        "entity_types is ['PER']",
    ),
    "prefixed entity types": ({"entity_types": ["B-PER"]}, "without their prefix"),
    "a tokenizer": ({"tokenizer": {"type": "whitespace"}}, "takes no tokenizer"),
    "blank document separator": ({"document_separator": " "}, "document_separator is ' '"),
}


@pytest.mark.parametrize("case", BAD_SETTINGS, ids=list(BAD_SETTINGS))
def test_bad_settings(case):
    change, expected = BAD_SETTINGS[case]
    with pytest.raises(ConfigurationError, match=re.escape(expected)):
        make_reader(**{**WS, "coding_scheme": "IOB2", **change})


# ----------------------------------------------------------------------------------------------
# A tagger trains on it
# ----------------------------------------------------------------------------------------------
def test_tune_tagger_trains_on_a_columns_file(tmp_path):
    torch.set_num_threads(1)
    bert = str(FIXTURE_MODELS_DIR / "bert-cased")
    sentences = [
        "Peter\tB-PER\nBlackburn\tI-PER\nvisits\tO\nParis\tB-LOC\n.\tO",
        "EU\tB-ORG\nrejects\tO\nGerman\tB-MISC\ncall\tO",
        "New\tB-LOC\nYork\tI-LOC\nis\tO\nbig\tO",
    ]
    train = write(tmp_path, "train.tsv", "\n\n".join(sentences * 2) + "\n")
    dev = write(tmp_path, "dev.tsv", "\n\n".join(sentences) + "\n")
    params = Params(
        {
            "dataset_reader": {
                "type": "tune_columns",
                "separator": "tab",
                "token_column": 0,
                "tag_column": 1,
                "coding_scheme": "IOB2",
                "convert_to_coding_scheme": "IOB2",
                "token_indexers": {
                    "tokens": {"type": "pretrained_transformer_mismatched", "model_name": bert}
                },
            },
            "train_data_path": train,
            "validation_data_path": dev,
            "model": {
                "type": "tune_tagger",
                "text_field_embedder": {
                    "token_embedders": {
                        "tokens": {
                            "type": "pretrained_transformer",
                            "model_name": bert,
                            "train_parameters": True,
                        }
                    }
                },
                "first_wordpiece": True,
                "label_encoding": "BIO",
            },
            "data_loader": {"batch_size": 4, "shuffle": False},
            "trainer": {
                "optimizer": {"type": "adam", "lr": 0.01},
                "num_epochs": 1,
                "cuda_device": -1,
                "validation_metric": "+f1-measure-overall",
            },
        }
    )
    out = tmp_path / "run"
    train_model(params, str(out))
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["epoch"] == 0 and "best_validation_f1-measure-overall" in metrics
    predictor = Predictor.from_archive(load_archive(str(out / "model.tar.gz")))
    output = predictor.predict_json({"tokens": ["Peter", "visits", "New", "York"]})
    assert len(output["tags"]) == 4
    assert set(output["tags"]) <= {
        "O",
        *(f"{p}-{t}" for p in "BI" for t in ("PER", "LOC", "ORG", "MISC")),
    }
