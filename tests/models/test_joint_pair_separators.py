"""
Jointly encoded pairs of tokenizers without token type ids (RoBERTa, XLM-R: `<s> a </s></s> b
</s>`, every type id 0): ESIM splits them at the model's separator tokens into `<s> a </s>` and
`b </s>`, as it splits BERT's `[CLS] a [SEP] b [SEP]` by type id into `[CLS] a [SEP]` and
`b [SEP]`; and the joint `fe` pair cell trains and predicts with them.
"""

import json
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
import torch
from allennlp.commands import main as allennlp_main
from allennlp.common.checks import ConfigurationError
from allennlp.data import Batch, Instance, Vocabulary
from allennlp.data.fields import TextField
from allennlp.data.token_indexers import PretrainedTransformerIndexer
from allennlp.data.tokenizers import PretrainedTransformerTokenizer
from allennlp.modules.text_field_embedders import BasicTextFieldEmbedder
from transformers import AutoTokenizer

import allennlp_tune  # noqa: F401
from allennlp_tune.data.paths import FIXTURE_MODELS_DIR, REPO_ROOT
from allennlp_tune.models.joint_pair import PRECOMPUTED, JointPairEmbedder
from allennlp_tune.modules.token_embedders import TuneTransformerEmbedder

UNTYPED = ["roberta", "xlm-roberta"]
# Pairs of different lengths, so that the batch is padded; the last has a one-word b.
PAIRS = [
    ("A man is playing a guitar", "The dog is eating the bread"),
    ("Two kids are playing", "A woman is singing a song and a man is playing the piano"),
    ("The dog is eating", "a"),
]


def _model(family: str) -> str:
    return str(FIXTURE_MODELS_DIR / family)


def joint_tensors(
    model: str, pairs: List[Tuple[str, str]], max_length=None
) -> Dict[str, Dict[str, torch.Tensor]]:
    """The `pretrained_transformer` indexer's joint pair fields, as the readers build them."""
    tokenizer = PretrainedTransformerTokenizer(model, add_special_tokens=False)
    indexer = PretrainedTransformerIndexer(model, max_length=max_length)
    instances = [
        Instance(
            {
                "tokens": TextField(
                    tokenizer.add_special_tokens(tokenizer.tokenize(a), tokenizer.tokenize(b)),
                    {"tokens": indexer},
                )
            }
        )
        for a, b in pairs
    ]
    batch = Batch(instances)
    batch.index_instances(Vocabulary())
    return batch.as_tensor_dict()["tokens"]


def joint_embedder(model: str, max_length=None) -> JointPairEmbedder:
    embedder = TuneTransformerEmbedder(model, max_length=max_length).eval()
    return JointPairEmbedder(BasicTextFieldEmbedder({"tokens": embedder}))


@pytest.mark.parametrize("family", UNTYPED)
def test_an_untyped_pair_splits_into_the_tokenizers_two_sentences(family):
    model = _model(family)
    tensors = joint_tensors(model, PAIRS)
    assert not tensors["tokens"]["type_ids"].any()  # the tokenizer gives no type ids
    hf_tokenizer = AutoTokenizer.from_pretrained(model)
    embedder = joint_embedder(model)
    with torch.no_grad():
        first, second = embedder.split(tensors)
        states = embedder.embedder(tensors)
    first, second = first[PRECOMPUTED], second[PRECOMPUTED]
    for row, (a, b) in enumerate(PAIRS):
        # By hand: the pair is `<s> a </s> </s> b </s>`, a's and b's pieces as tokenized alone.
        ids = hf_tokenizer(a, b)["input_ids"]
        num_a = len(hf_tokenizer(a, add_special_tokens=False)["input_ids"])
        num_b = len(hf_tokenizer(b, add_special_tokens=False)["input_ids"])
        assert tensors["tokens"]["token_ids"][row, : len(ids)].tolist() == ids
        assert len(ids) == num_a + num_b + 4
        sep = hf_tokenizer.sep_token_id
        first_positions = list(range(0, num_a + 2))  # <s> a </s>
        second_positions = list(range(num_a + 3, num_a + 3 + num_b + 1))  # b </s>
        assert ids[first_positions[-1]] == sep and ids[num_a + 2] == sep
        assert ids[second_positions[-1]] == sep and second_positions[-1] == len(ids) - 1
        for part, positions in ((first, first_positions), (second, second_positions)):
            assert part["mask"][row].sum() == len(positions)
            assert not part["mask"][row, len(positions) :].any()
            torch.testing.assert_close(
                part["states"][row, : len(positions)], states[row, positions]
            )
            assert not part["states"][row, len(positions) :].any()  # padding is zeroed


def test_the_separator_comes_from_the_models_tokenizer():
    embedder = joint_embedder(_model("roberta"))
    assert embedder.separator_id() == AutoTokenizer.from_pretrained(_model("roberta")).sep_token_id
    bert = joint_embedder(_model("bert-uncased"))
    assert bert.separator_id() == AutoTokenizer.from_pretrained(_model("bert-uncased")).sep_token_id
    assert bert.separator_id() != embedder.separator_id()  # [SEP] is 3 here, </s> 2


def test_an_untyped_pair_with_an_empty_second_sentence_keeps_its_final_separator():
    model = _model("roberta")
    tensors = joint_tensors(model, [("A man is playing", "")])
    first, second = joint_embedder(model).split(tensors)
    num_a = len(AutoTokenizer.from_pretrained(model)("A man is playing")["input_ids"])
    assert first[PRECOMPUTED]["mask"].sum() == num_a  # <s> a </s>
    assert second[PRECOMPUTED]["mask"].sum() == 1  # </s>, as BERT's b is then [SEP]


def test_an_untyped_row_without_separators_is_a_configuration_error():
    model = _model("roberta")
    tensors = joint_tensors(model, PAIRS[:2])
    token_ids = tensors["tokens"]["token_ids"]
    token_ids[1][token_ids[1] == 2] = 5
    with pytest.raises(ConfigurationError, match="row 1 .*no separator"):
        joint_embedder(model).split(tensors)


def test_an_untyped_folded_pair_asks_for_separate_encoding():
    model = _model("roberta")
    tensors = joint_tensors(model, PAIRS, max_length=16)
    with pytest.raises(ConfigurationError, match="max_length.*pair_encoding 'separate'"):
        joint_embedder(model, max_length=16).split(tensors)


@pytest.mark.parametrize("family", ["bert-uncased", "bert-cased"])
def test_a_typed_pair_splits_by_type_id_as_before(family):
    model = _model(family)
    tensors = joint_tensors(model, PAIRS)
    mask = tensors["tokens"]["mask"]
    type_ids = tensors["tokens"]["type_ids"]
    assert type_ids.any(dim=1).all()
    # The same pairs with every type id 0 go through the separators ([SEP]).
    untyped_tensors = {"tokens": dict(tensors["tokens"], type_ids=torch.zeros_like(type_ids))}
    embedder = joint_embedder(model)
    with torch.no_grad():
        states = embedder.embedder(tensors)
        typed = embedder.split(tensors)
        # BERT embeds type ids, so these states differ; the positions must not.
        untyped_states = embedder.embedder(untyped_tensors)
        untyped = embedder.split(untyped_tensors)
    for index, (part, other) in enumerate(zip(typed, untyped)):
        part, other = part[PRECOMPUTED], other[PRECOMPUTED]
        # Type 0: [CLS] a [SEP]; type 1: b [SEP]; each packed to the left, exactly as the
        # type-id split always did.
        keep = mask & (type_ids == index)
        assert part["mask"].sum(1).tolist() == keep.sum(1).tolist()
        assert torch.equal(other["mask"], part["mask"])
        for row in range(len(PAIRS)):
            expected = states[row][keep[row]]
            assert torch.equal(part["states"][row][: len(expected)], expected)
            assert not part["states"][row][len(expected) :].any()
            expected = untyped_states[row][keep[row]]
            assert torch.equal(other["states"][row][: len(expected)], expected)


# ---- the fe pair cell ---------------------------------------------------------------------------


@pytest.mark.parametrize("family", UNTYPED)
def test_the_joint_fe_pair_cell_trains_and_predicts(family, tmp_path, monkeypatch):
    env = {
        "TUNE_DATA_DIR": str(REPO_ROOT / "fixtures" / "data"),
        "TUNE_BERT_MODEL": _model(family),
        "TUNE_EPOCHS": "1",
        "TUNE_BATCH_SIZE": "4",
        "TUNE_FEATURE_CACHE_DIR": str(tmp_path / "cache"),
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    torch.set_num_threads(1)
    out = tmp_path / "run"
    config = REPO_ROOT / "training_config" / "sick_e_bert_fe.jsonnet"
    monkeypatch.setattr(sys, "argv", ["allennlp", "train", str(config), "-s", str(out)])
    allennlp_main(prog="allennlp")
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["epoch"] == 0 and 0.0 <= metrics["best_validation_accuracy"] <= 1.0

    inputs = tmp_path / "inputs.jsonl"
    lines = [{"premise": a, "hypothesis": b} for a, b in PAIRS]
    inputs.write_text("".join(json.dumps(line) + "\n" for line in lines))
    predictions = tmp_path / "predictions.jsonl"
    argv = ["predict", str(out / "model.tar.gz"), str(inputs), "--output-file", str(predictions)]
    monkeypatch.setattr(sys, "argv", ["allennlp", *argv, "--silent"])
    allennlp_main(prog="allennlp")
    outputs = [json.loads(line) for line in Path(predictions).read_text().splitlines()]
    assert len(outputs) == len(PAIRS)
    for output in outputs:
        assert sum(output["probabilities"].values()) == pytest.approx(1.0)
