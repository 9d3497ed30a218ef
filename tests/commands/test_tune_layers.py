"""
`allennlp tune-layers` and its signal (`allennlp_tune.analysis.layer_signal`): the relative
gradient norm per layer group against a direct computation on the tiny BERT fixture, the
predicted blocks following the RGN, and the command end to end on a task file of one's own
(tune-compare's ft config, `layer_signal.json`, short errors).
"""

import json
import sys
from pathlib import Path

import pytest
import torch
from allennlp.commands import main as allennlp_main

from allennlp_tune.analysis.layer_signal import measure_rgn, predict_blocks
from allennlp_tune.modules.token_embedders.tune_transformer import TuneTransformerEmbedder
from tests.results.test_compare import write_reviews


class Classifier(torch.nn.Module):
    """The tiny BERT's [CLS] vector into a linear layer: enough model for a loss."""

    def __init__(self, model_name: str, mode: str, dropout: bool = True) -> None:
        super().__init__()
        self.embedder = TuneTransformerEmbedder(model_name, mode=mode, layers="top")
        if not dropout:  # every step reproducible on its own, in train mode too
            for module in self.embedder.modules():
                if isinstance(module, torch.nn.Dropout):
                    module.p = 0.0
                if hasattr(module, "dropout_prob"):  # the SDPA attention's own dropout
                    module.dropout_prob = 0.0
        self.head = torch.nn.Linear(16, 2)

    def forward(self, token_ids, mask, label):
        logits = self.head(self.embedder(token_ids, mask)[:, 0])
        return {"loss": torch.nn.functional.cross_entropy(logits, label)}


def batch(seed: int):
    generator = torch.Generator().manual_seed(seed)
    token_ids = torch.randint(1, 300, (4, 7), generator=generator)
    return {
        "token_ids": token_ids,
        "mask": torch.ones_like(token_ids, dtype=torch.bool),
        "label": torch.tensor([0, 1, 1, 0]),
    }


def test_the_rgn_of_each_group_is_its_gradient_norm_over_its_weight_norm(tiny_bert):
    """One step: ||g|| / ||w|| over every tensor of the group, computed here by hand."""
    torch.manual_seed(1)
    model = Classifier(tiny_bert, "fine_tuning")
    model.train()
    torch.manual_seed(0)  # measure_rgn seeds the dropout with its seed, 0 by default
    model(**batch(1))["loss"].backward()
    expected = [
        torch.cat([p.grad.flatten() for _, p in group]).norm().item()
        / torch.cat([p.detach().flatten() for _, p in group]).norm().item()
        for _, group in model.embedder.layer_groups()
    ]
    model.zero_grad(set_to_none=True)

    signals = measure_rgn(model, [batch(1)], steps=1)

    assert [s.name for s in signals] == ["embeddings", "layer_0", "layer_1", "layer_2", "layer_3"]
    assert [s.rgn for s in signals] == pytest.approx(expected, rel=1e-5)
    assert all(s.rgn > 0 for s in signals)
    assert signals[1].parameters == sum(p.numel() for _, p in model.embedder.layer_groups()[1][1])
    assert all(p.grad is None for p in model.parameters())  # no gradient is left behind


def test_a_frozen_encoder_is_measured_whole_and_steps_average(tiny_bert):
    """A feature-extraction embedder is unfrozen first; over two steps the RGN is the mean."""
    torch.manual_seed(1)
    model = Classifier(tiny_bert, "feature_extraction", dropout=False)
    both = measure_rgn(model, [batch(1), batch(2)], steps=2)
    assert model.embedder.trainable_groups() == [0, 1, 2, 3, 4]
    assert all(s.rgn > 0 for s in both)
    one = [measure_rgn(model, [b], steps=1) for b in (batch(1), batch(2))]
    means = [(a.rgn + b.rgn) / 2 for a, b in zip(*one)]
    assert [s.rgn for s in both] == pytest.approx(means, rel=1e-5)


def test_the_predicted_block_follows_the_signal():
    bottom_heavy = predict_blocks([0.9, 0.5, 0.1, 0.1, 0.05], ["e", "l0", "l1", "l2", "l3"])
    assert [b["predicted"] for b in bottom_heavy] == ["bottom1", "bottom2", "bottom3", "bottom4"]
    assert bottom_heavy[1]["bottom"] == pytest.approx(0.7)
    assert bottom_heavy[1]["top"] == pytest.approx(0.075)
    top_heavy = predict_blocks([0.05, 0.1, 0.1, 0.5, 0.9])
    assert [b["predicted"] for b in top_heavy] == ["top1", "top2", "top3", "top4"]
    middle = predict_blocks([0.1, 0.2, 0.9, 0.8, 0.1], ["e", "l0", "l1", "l2", "l3"])
    assert middle[0]["best_contiguous"] == {"groups": "2-2", "names": ["l1"], "rgn": 0.9}
    assert middle[1]["best_contiguous"]["groups"] == "2-3"
    assert middle[1]["predicted"] == "top2"  # 0.45 vs 0.15
    assert predict_blocks([0.3, 0.3])[0]["predicted"] == "top1"  # a tie keeps the usual top


def allennlp(monkeypatch, *argv: str) -> int:
    monkeypatch.setattr(sys, "argv", ["allennlp", *argv])
    try:
        allennlp_main(prog="allennlp")
    except SystemExit as exit:
        return exit.code
    return 0


def test_tune_layers_measures_the_ft_config_and_keeps_the_signal(
    tmp_path, monkeypatch, capsys, tiny_bert
):
    task = write_reviews(tmp_path / "reviews")
    results = tmp_path / "results"
    argv = ["tune-layers", str(task), "--encoder", tiny_bert, "--encoder-label", "minilm"]
    argv += ["--steps", "2", "--max-instances", "8", "--results-dir", str(results)]
    assert allennlp(monkeypatch, *argv, "--json", str(tmp_path / "signal.json")) == 0
    out = capsys.readouterr().out
    assert "predicted: " in out and "layer_3" in out
    saved = json.loads((results / "layer_signal.json").read_text())
    (entry,) = saved["signals"]
    assert (entry["task"], entry["encoder"], entry["steps"], entry["instances"]) == (
        "reviews", "minilm", 2, 8,
    )  # fmt: skip
    assert [g["name"] for g in entry["groups"]] == [
        "embeddings", "layer_0", "layer_1", "layer_2", "layer_3",
    ]  # fmt: skip
    rgn = [g["rgn"] for g in entry["groups"]]
    assert entry["blocks"] == json.loads(
        json.dumps(predict_blocks(rgn, [g["name"] for g in entry["groups"]]))
    )
    assert json.loads((tmp_path / "signal.json").read_text()) == entry
    config = results / "configs" / "reviews_minilm_ft.jsonnet"
    assert Path(entry["config"]) == config and config.is_file()  # tune-compare's ft config

    # Again with another seed: the signal of this task and encoder is replaced, not added.
    assert allennlp(monkeypatch, *argv, "--seed", "3") == 0
    (entry,) = json.loads((results / "layer_signal.json").read_text())["signals"]
    assert entry["seed"] == 3


def test_tune_layers_bad_input_is_one_line(tmp_path, monkeypatch, capsys, tiny_bert):
    assert allennlp(monkeypatch, "tune-layers", "no_such_task", "--encoder", tiny_bert) == 2
    err = capsys.readouterr().err
    assert "TASK 'no_such_task' is neither a shipped task" in err and "Traceback" not in err
    task = write_reviews(tmp_path / "reviews")
    assert (
        allennlp(monkeypatch, "tune-layers", str(task), "--encoder", tiny_bert, "--steps", "0") == 2
    )
    assert "--steps" in capsys.readouterr().err
