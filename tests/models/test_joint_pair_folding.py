"""
Jointly encoded pairs longer than the encoder's positions, folded with `max_length` (what the
embedder's error tells users to set): ESIM splits them at the right place, and the joint `fe`
configs (ESIM) and the `ft` configs (pooled classifier) train, evaluate and predict on them.
"""

import json
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
import torch
from allennlp.commands import main as allennlp_main
from allennlp.data import Batch, Instance, Vocabulary
from allennlp.data.fields import TextField
from allennlp.data.token_indexers import PretrainedTransformerIndexer
from allennlp.data.tokenizers import PretrainedTransformerTokenizer
from allennlp.modules.text_field_embedders import BasicTextFieldEmbedder

import allennlp_tune  # noqa: F401
from allennlp_tune.data.paths import FIXTURE_MODELS_DIR, REPO_ROOT
from allennlp_tune.models.joint_pair import PRECOMPUTED, JointPairEmbedder
from allennlp_tune.modules.token_embedders import TuneTransformerEmbedder

BERT = str(FIXTURE_MODELS_DIR / "bert-uncased")
MAX_POSITIONS = 64  # the tiny BERT's max_position_embeddings
MAX_LENGTH = 16
# Words of the tiny model's vocabulary, so that every word is one wordpiece.
LONG_A = "a man is playing a guitar and the woman is singing a song " * 4
LONG_B = "the woman is not singing and a man is playing the piano " * 3


def joint_tensors(
    pairs: List[Tuple[str, str]], max_length=None
) -> Dict[str, Dict[str, torch.Tensor]]:
    tokenizer = PretrainedTransformerTokenizer(BERT, add_special_tokens=False)
    indexer = PretrainedTransformerIndexer(BERT, max_length=max_length)
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


def joint_embedder(max_length=None) -> JointPairEmbedder:
    embedder = TuneTransformerEmbedder(BERT, max_length=max_length).eval()
    return JointPairEmbedder(BasicTextFieldEmbedder({"tokens": embedder}))


PAIRS = [(LONG_A, LONG_B), ("a man is playing", LONG_B), (LONG_A, "a woman"), ("a man", "a song")]


def test_folded_pairs_split_where_unfolded_ones_do():
    plain = joint_tensors(PAIRS)
    folded = joint_tensors(PAIRS, max_length=MAX_LENGTH)
    assert plain["tokens"]["token_ids"].size(1) > MAX_POSITIONS
    assert folded["tokens"]["type_ids"].size(1) > folded["tokens"]["mask"].size(1)
    torch.testing.assert_close(folded["tokens"]["mask"], plain["tokens"]["mask"])
    mask = plain["tokens"]["mask"]
    type_ids = plain["tokens"]["type_ids"]

    first, second = joint_embedder(MAX_LENGTH).split(folded)
    first, second = first[PRECOMPUTED], second[PRECOMPUTED]
    # The parts have the lengths of the pair's own type 0 / type 1 wordpieces...
    assert first["mask"].sum(1).tolist() == (mask & (type_ids == 0)).sum(1).tolist()
    assert second["mask"].sum(1).tolist() == (mask & (type_ids == 1)).sum(1).tolist()
    # ... and hold their states: the folded embedder's output at those positions, in order.
    states = joint_embedder(MAX_LENGTH).embedder(folded)
    for row in range(len(PAIRS)):
        for part, keep in ((first, type_ids[row] == 0), (second, type_ids[row] == 1)):
            expected = states[row][mask[row] & keep]
            torch.testing.assert_close(part["states"][row][: len(expected)], expected)


def test_short_pairs_split_the_same_with_and_without_max_length():
    pairs = [("a man is playing", "a woman is singing"), ("a man", "the piano")]
    plain = joint_embedder().split(joint_tensors(pairs))
    folded = joint_embedder(MAX_LENGTH * 4).split(joint_tensors(pairs, max_length=MAX_LENGTH * 4))
    for plain_part, folded_part in zip(plain, folded):
        assert torch.equal(plain_part[PRECOMPUTED]["mask"], folded_part[PRECOMPUTED]["mask"])


# ---- the configs -------------------------------------------------------------------------------

SICK_HEADER = (
    "pair_ID\tsentence_A\tsentence_B\tentailment_label\trelatedness_score\tentailment_AB\t"
    "entailment_BA\tsentence_A_original\tsentence_B_original\tsentence_A_dataset\t"
    "sentence_B_dataset\tSemEval_set"
)
LABELS = ["ENTAILMENT", "NEUTRAL", "CONTRADICTION"]


def write_long_data(folder: Path) -> Dict[str, Path]:
    """SICK, MRPC and STS-B files whose pairs are longer than the tiny model's positions."""
    pairs = [(LONG_A, LONG_B), ("a man is playing", LONG_B), (LONG_A, "a woman"), *PAIRS[:1]]
    sick = [SICK_HEADER]
    for index, (a, b) in enumerate(pairs * 2):
        split = "TRAIN" if index < len(pairs) else "TRIAL"
        label = LABELS[index % 3]
        sick.append("\t".join([str(index), a, b, label, "3.5", "x", "x", a, b, "F", "F", split]))
    mrpc = ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"]
    mrpc += [f"{index % 2}\t{index}\t{index + 100}\t{a}\t{b}" for index, (a, b) in enumerate(pairs)]
    sts = [f"g\tf\t2012\t{index}\t{index + 1.5}\t{a}\t{b}" for index, (a, b) in enumerate(pairs)]
    paths = {
        "sick": folder / "SICK.txt",
        "mrpc": folder / "msr_paraphrase_train.txt",
        "mrpc_ids": folder / "dev_ids.tsv",
        "sts_b": folder / "sts-train.csv",
    }
    paths["sick"].write_text("\r\n".join(sick) + "\r\n")
    paths["mrpc"].write_text("\n".join(mrpc) + "\n")
    paths["mrpc_ids"].write_text("999\t1099\n")  # excludes nothing from train
    paths["sts_b"].write_text("\n".join(sts) + "\n")
    return paths


def folding_overrides(config: str, paths: Dict[str, Path]) -> Dict[str, object]:
    """max_length on the indexers and the embedder, and the long data (AllenNLP's dotted keys)."""
    task = config.split("_bert_")[0]
    data = {"sick_e": "sick", "mrpc": "mrpc", "sts_b": "sts_b"}[task]
    overrides = {
        "dataset_reader.token_indexers.tokens.max_length": MAX_LENGTH,
        "train_data_path": str(paths[data]),
        "validation_data_path": str(paths[data]),
        "model.text_field_embedder.token_embedders.tokens.max_length": MAX_LENGTH,
    }
    if task in ("sick_e", "mrpc"):
        overrides["validation_dataset_reader.token_indexers.tokens.max_length"] = MAX_LENGTH
    if task == "mrpc":
        overrides["dataset_reader.ids_file"] = str(paths["mrpc_ids"])
    return overrides


def run_allennlp(monkeypatch, *argv: str) -> None:
    monkeypatch.setattr(sys, "argv", ["allennlp", *argv])
    allennlp_main(prog="allennlp")


@pytest.mark.parametrize(
    "config", ["sick_e_bert_fe", "mrpc_bert_fe", "sts_b_bert_ft", "mrpc_bert_ft"]
)
def test_configs_train_and_predict_on_pairs_longer_than_the_model(config, tmp_path, monkeypatch):
    for name, value in {
        "TUNE_BERT_MODEL": BERT,
        "TUNE_EPOCHS": "1",
        "TUNE_BATCH_SIZE": "2",
        "TUNE_FEATURE_CACHE_DIR": str(tmp_path / "cache"),
    }.items():
        monkeypatch.setenv(name, value)
    paths = write_long_data(tmp_path)
    overrides = json.dumps(folding_overrides(config, paths))
    out = tmp_path / "run"
    path = REPO_ROOT / "training_config" / f"{config}.jsonnet"
    run_allennlp(monkeypatch, "train", str(path), "-s", str(out), "-o", overrides)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["training_loss"] == pytest.approx(metrics["training_loss"])  # not NaN

    inputs = tmp_path / "inputs.jsonl"
    lines = [{"premise": LONG_A, "hypothesis": LONG_B}, {"premise": "a man", "hypothesis": "a"}]
    inputs.write_text("".join(json.dumps(line) + "\n" for line in lines))
    predictions = tmp_path / "predictions.jsonl"
    run_allennlp(
        monkeypatch,
        "predict",
        str(out / "model.tar.gz"),
        str(inputs),
        "--output-file",
        str(predictions),
        "--silent",
    )
    outputs = [json.loads(line) for line in predictions.read_text().splitlines()]
    assert len(outputs) == 2
    for output in outputs:
        if config.startswith("sts_b"):
            assert isinstance(output["score"], float)
        else:
            assert sum(output["probabilities"].values()) == pytest.approx(1.0)
