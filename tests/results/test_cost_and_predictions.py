"""
`cost.json` (the `tune_cost` callback) and `dev_predictions.jsonl` (`write_dev_predictions`)
from real tiny trainings of shipped configs (tiny BERT, fixture data), in this process.
"""

import csv
import json
import re
from pathlib import Path
from typing import Dict, List

import pytest
import torch
from allennlp.commands.train import train_model
from allennlp.common import Params

import allennlp_tune  # noqa: F401  (registers the components)
from allennlp_tune.data.dataset_readers.conll2003 import iob1_to_iob2
from allennlp_tune.data.paths import FIXTURE_DATA_DIR, FIXTURE_MODELS_DIR, REPO_ROOT
from allennlp_tune.experiments.outputs import record_archive_size, write_dev_predictions

CONFIG_DIR = REPO_ROOT / "training_config"


def _bert_keeps_position_ids_in_its_state_dict() -> bool:
    from transformers import BertConfig, BertModel

    config = BertConfig(
        vocab_size=8, hidden_size=4, num_hidden_layers=1, num_attention_heads=1,
        intermediate_size=4, max_position_embeddings=4,
    )  # fmt: skip
    with torch.random.fork_rng():  # leaves the global random state as it was
        return "embeddings.position_ids" in BertModel(config).state_dict()


# transformers < 4.31 stores BERT's `position_ids` (a buffer, 64 numbers in the fixture) in the
# state dict, so the archive holds more numbers than the model has parameters.
exact_state_dict = pytest.mark.skipif(
    _bert_keeps_position_ids_in_its_state_dict(),
    reason="this transformers keeps BERT's position_ids buffer in the state dict, so stored "
    "numbers = parameters + 64 (the identity holds from transformers 4.31)",
)


def train(
    config: str, run_dir: Path, monkeypatch, tmp_path: Path, epochs: int = 1, **trainer
) -> Dict:
    """Trains `training_config/<config>.jsonnet` on the fixtures with the `tune_cost` callback
    (and the `trainer` keys given)."""
    torch.set_num_threads(1)
    cased = config.startswith("conll2003")
    ext_vars = {
        "TUNE_DATA_DIR": str(FIXTURE_DATA_DIR),
        "TUNE_BERT_MODEL": str(FIXTURE_MODELS_DIR / ("bert-cased" if cased else "bert-uncased")),
        "TUNE_EPOCHS": str(epochs),
        "TUNE_FROZEN_EPOCHS": "1",
        "TUNE_BATCH_SIZE": "4",
        "TUNE_FEATURE_CACHE_DIR": str(tmp_path / "cache"),
        "TUNE_SEED": "1",
    }
    for name, value in ext_vars.items():
        monkeypatch.setenv(name, value)
    params = Params.from_file(str(CONFIG_DIR / f"{config}.jsonnet")).as_dict(quiet=True)
    callbacks = list(params["trainer"].get("callbacks") or [])
    if {"type": "tune_cost"} not in callbacks:  # whether or not the trainers ship it
        callbacks.append({"type": "tune_cost"})
    params["trainer"]["callbacks"] = callbacks
    params["trainer"].update(trainer)
    train_model(Params(params), serialization_dir=str(run_dir))
    return json.loads((run_dir / "cost.json").read_text())


def read_lines(path: Path) -> List[Dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def sst2_dev_labels() -> List[str]:
    with open(FIXTURE_DATA_DIR / "sst-2" / "dev.tsv", encoding="utf-8") as handle:
        return [row["label"] for row in csv.DictReader(handle, delimiter="\t")]


def conll_sentences(path: Path) -> List[List[List[str]]]:
    """[[word, ner tag], ...] per sentence of a CoNLL-2003 file."""
    sentences, current = [], []
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("-DOCSTART-"):
            if current:
                sentences.append(current)
            current = []
            continue
        fields = line.split()
        current.append([fields[0], fields[-1]])
    if current:
        sentences.append(current)
    return sentences


@exact_state_dict
def test_frozen_run_trains_fewer_parameters_and_predicts_the_dev_set(tmp_path, monkeypatch):
    run_dir = tmp_path / "sst2_bert_fe"
    cost = train("sst2_bert_fe", run_dir, monkeypatch, tmp_path)

    assert 0 < cost["trainable_params"] < cost["total_params"]
    # Only the scalar mix of the frozen encoder trains.
    assert cost["encoder_trainable_params"] < cost["encoder_params"] < cost["total_params"]
    assert cost["stored_params"] == cost["total_params"]  # the whole state dict is archived
    assert len(cost["epoch_seconds"]) == cost["epochs"] == 1
    assert cost["mean_epoch_seconds"] == pytest.approx(cost["epoch_seconds"][0], abs=1e-3)
    assert cost["peak_rss_mb"] > 50
    assert cost["peak_gpu_mb"] is None  # CPU
    assert cost["finished"] is True
    # Every training instance once in its one epoch, the encoder frozen: forward passes only.
    train_rows = (FIXTURE_DATA_DIR / "sst-2" / "train.tsv").read_text().strip().splitlines()
    assert cost["epoch_instances"] == [len(train_rows) - 1]
    assert cost["epoch_encoder_trained"] == [False]
    # The fixture BERT's 4 layers, which a block mode's encoder passes are shares of.
    assert cost["encoder_layers"] == 4

    size = record_archive_size(run_dir)
    assert size == (run_dir / "model.tar.gz").stat().st_size > 0
    assert json.loads((run_dir / "cost.json").read_text())["archive_bytes"] == size

    assert write_dev_predictions(run_dir) == len(sst2_dev_labels())
    lines = read_lines(run_dir / "dev_predictions.jsonl")
    assert [line["index"] for line in lines] == list(range(len(lines)))
    assert [line["gold"] for line in lines] == sst2_dev_labels()  # input order, label strings
    assert all(set(line) == {"index", "gold", "prediction"} for line in lines)
    assert all(line["prediction"] in {"0", "1"} for line in lines)
    # They are the archived (best) model's predictions: its dev accuracy, recomputed.
    accuracy = sum(line["gold"] == line["prediction"] for line in lines) / len(lines)
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert accuracy == pytest.approx(metrics["best_validation_accuracy"])


@exact_state_dict
def test_fine_tuning_trains_every_parameter(tmp_path, monkeypatch):
    cost = train("sst2_bert_ft", tmp_path / "run", monkeypatch, tmp_path)
    assert cost["trainable_params"] == cost["total_params"] == cost["stored_params"]
    assert cost["encoder_trainable_params"] == cost["encoder_params"]
    assert cost["epoch_encoder_trained"] == [True] * cost["epochs"]
    assert len(cost["epoch_instances"]) == cost["epochs"] and cost["epoch_instances"][0] > 0


def test_stack_then_finetune_counts_the_most_it_trained_and_predicts_without_caching_again(
    tmp_path, monkeypatch
):
    # Epoch 0 frozen, epoch 1 fine-tunes everything: the maximum is every parameter.
    run_dir = tmp_path / "run"
    # The best epoch by loss is the fine-tuned one (accuracy ties on the fixture's dev set).
    cost = train(
        "sst2_bert_sf", run_dir, monkeypatch, tmp_path, epochs=2, validation_metric="-loss"
    )
    assert cost["trainable_params"] == cost["total_params"]
    assert cost["epochs"] == len(cost["epoch_seconds"]) == 2
    assert cost["epoch_encoder_trained"] == [False, True]  # backward through it in epoch 1 only
    assert cost["epoch_instances"][0] == cost["epoch_instances"][1] > 0
    phases = read_lines(run_dir / "adaptation.jsonl")
    assert phases[0]["trainable_groups"] == 0 and phases[-1]["trainable_groups"] > 0

    # The archived weights are the fine-tuned ones; reloaded, the model starts in sf's frozen
    # first stage, so its feature cache applies, keyed by those weights. The dev predictions
    # read the cache but add nothing to it: the whole dev set stored once more per run, for
    # features no later run asks for.
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["best_epoch"] == 1
    entries = sorted((tmp_path / "cache").rglob("*.f16"))
    assert entries  # the frozen epoch cached the train and dev features
    assert write_dev_predictions(run_dir) == len(sst2_dev_labels())
    assert sorted((tmp_path / "cache").rglob("*.f16")) == entries
    lines = read_lines(run_dir / "dev_predictions.jsonl")
    accuracy = sum(line["gold"] == line["prediction"] for line in lines) / len(lines)
    assert accuracy == pytest.approx(metrics["best_validation_accuracy"])


def test_tagging_predictions_are_tag_lists_per_word(tmp_path, monkeypatch):
    run_dir = tmp_path / "conll2003_bert_fe"
    cost = train("conll2003_bert_fe", run_dir, monkeypatch, tmp_path)
    assert cost["trainable_params"] < cost["total_params"]

    sentences = conll_sentences(FIXTURE_DATA_DIR / "conll2003" / "eng.testa")
    assert write_dev_predictions(run_dir) == len(sentences)
    lines = read_lines(run_dir / "dev_predictions.jsonl")
    assert [line["index"] for line in lines] == list(range(len(sentences)))
    for line, sentence in zip(lines, sentences):
        # The task's scheme: the reader turns the file's IOB1 into IOB2, which the model tags.
        assert line["gold"] == iob1_to_iob2([tag for _, tag in sentence])
        assert len(line["prediction"]) == len(sentence)
        assert all(re.fullmatch(r"O|[BI]-(PER|LOC|ORG|MISC)", tag) for tag in line["prediction"])


def test_regression_predictions_are_floats(tmp_path, monkeypatch):
    run_dir = tmp_path / "sts_b_bert_fe"
    train("sts_b_bert_fe", run_dir, monkeypatch, tmp_path)
    count = write_dev_predictions(run_dir)
    lines = read_lines(run_dir / "dev_predictions.jsonl")
    assert len(lines) == count > 0
    for line in lines:
        assert isinstance(line["gold"], float) and isinstance(line["prediction"], float)


@pytest.mark.parametrize(
    "config, loaders, expected",
    [
        ({"data_loader": {"batch_size": 16}}, ("data_loader",), 16),
        (
            {"data_loader": {"batch_sampler": {"type": "bucket", "batch_size": 8}}},
            ("data_loader",),
            8,
        ),
        # the prediction writers read the validation loader first, then the training one
        (
            {"validation_data_loader": {"batch_size": 64}, "data_loader": {"batch_size": 16}},
            ("validation_data_loader", "data_loader"),
            64,
        ),
        ({"data_loader": {"batch_size": 16}}, ("validation_data_loader", "data_loader"), 16),
        ({"data_loader": {"batch_size": True}}, ("data_loader",), None),
        ({"data_loader": {"batch_size": 0}}, ("data_loader",), None),
        ({"data_loader": "loader"}, ("data_loader",), None),
        ({}, ("data_loader",), None),
    ],
)
def test_one_reader_gives_every_caller_its_batch_size(config, loaders, expected):
    from allennlp_tune.analysis.layer_signal import loader_batch_size as signal_reader
    from allennlp_tune.experiments.outputs import prediction_batch_size
    from allennlp_tune.planning.calibrate import batch_size_of
    from allennlp_tune.rundir import loader_batch_size

    assert loader_batch_size(config, loaders) == expected
    assert signal_reader is loader_batch_size
    if loaders == ("data_loader",):
        assert batch_size_of(config) == expected
    else:
        assert prediction_batch_size(config) == (expected or 32)
