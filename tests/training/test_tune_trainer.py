"""
`tune_gradient_descent` on the CPU: its switches off it trains as `gradient_descent`; bf16
autocast; CUDA-graph modes fall back to eager with the reason logged; and the compiled step is
captured per input shape and again when the trainable layer groups change.
"""

import logging
import subprocess
import sys
from typing import Dict, List

import pytest
import torch
from allennlp.common import Params
from allennlp.data import Instance, Vocabulary
from allennlp.data.data_loaders import SimpleDataLoader
from allennlp.data.fields import LabelField, TensorField
from allennlp.models import Model
from allennlp.training import Trainer

from allennlp_tune.training.metrics import ClassificationMetrics
from allennlp_tune.training.tune_trainer import TuneGradientDescentTrainer

# The capture tests drive torch.compiler (torch >= 2.1); the stock AllenNLP 2.10.1 stack has
# torch 1.12, where the trainer logs that it cannot compile and trains eagerly.
pytestmark = pytest.mark.skipif(
    not hasattr(torch, "compiler"), reason=f"needs torch >= 2.1; this is torch {torch.__version__}"
)


class ToyEncoder(torch.nn.Module):
    """A layer-group provider (the protocol of `layer_groups.py`): two layers, two groups."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(2))
        self._trainable = {0, 1}

    def layer_groups(self) -> List[List[torch.nn.Parameter]]:
        return [list(layer.parameters()) for layer in self.layers]

    def trainable_groups(self) -> List[int]:
        return sorted(self._trainable)

    def freeze(self) -> None:
        self._set({})

    def unfreeze(self, top_k_groups=None) -> None:
        self._set(self._trainable | set(range(2 - (top_k_groups or 2), 2)))

    def _set(self, trainable) -> None:
        self._trainable = set(trainable)
        for index, group in enumerate(self.layer_groups()):
            for parameter in group:
                parameter.requires_grad_(index in self._trainable)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            features = torch.tanh(layer(features))
        return features


class ToyClassifier(Model):
    def __init__(self, vocab: Vocabulary) -> None:
        super().__init__(vocab)
        self.encoder = ToyEncoder()
        self.head = torch.nn.Linear(4, vocab.get_vocab_size("labels"))
        self._metrics = ClassificationMetrics(vocab)
        self.autocast_seen: List[bool] = []

    def forward(self, features: torch.Tensor, label: torch.Tensor) -> Dict[str, torch.Tensor]:
        if not torch.compiler.is_compiling():
            self.autocast_seen.append(torch.is_autocast_enabled("cpu"))
        # Shape: (batch_size, num_labels)
        logits = self.head(self.encoder(features))
        self._metrics(logits, label)
        return {"logits": logits, "loss": torch.nn.functional.cross_entropy(logits.float(), label)}

    def get_metrics(self, reset: bool = False) -> Dict[str, float]:
        return self._metrics.get_metric(reset)


def toy_data(num=24):
    generator = torch.Generator().manual_seed(0)
    features = torch.randn(num, 4, generator=generator)
    labels = (features[:, 0] > 0).long()
    instances = [
        Instance({"features": TensorField(row), "label": LabelField(int(y), skip_indexing=True)})
        for row, y in zip(features, labels)
    ]
    vocab = Vocabulary()
    vocab.add_tokens_to_namespace(["0", "1"], "labels")
    return instances, vocab


def build(tmp_path, name, **trainer):
    torch.manual_seed(0)
    instances, vocab = toy_data()
    loader = SimpleDataLoader(instances, batch_size=8, vocab=vocab)
    model = ToyClassifier(vocab)
    params = {"num_epochs": 3, "optimizer": {"type": "adamw", "lr": 0.05}, **trainer}
    return Trainer.from_params(
        params=Params(params),
        model=model,
        serialization_dir=str(tmp_path / name),
        data_loader=loader,
        validation_data_loader=SimpleDataLoader(instances, batch_size=8, vocab=vocab),
    )


def weights(trainer):
    return [parameter.detach().clone() for parameter in trainer.model.parameters()]


def test_without_switches_it_is_gradient_descent(tmp_path):
    plain = build(tmp_path, "plain", type="gradient_descent")
    tuned = build(tmp_path, "tuned", type="tune_gradient_descent")
    assert isinstance(tuned, TuneGradientDescentTrainer)
    plain_metrics, tuned_metrics = plain.train(), tuned.train()
    for got, want in zip(weights(tuned), weights(plain)):
        assert torch.equal(got, want)
    assert tuned_metrics["validation_accuracy"] == plain_metrics["validation_accuracy"]
    assert not any(tuned.model.autocast_seen)


def test_bfloat16_autocast_trains_close_to_float32(tmp_path):
    plain = build(tmp_path, "plain", type="gradient_descent")
    bf16 = build(tmp_path, "bf16", type="tune_gradient_descent", autocast="bfloat16")
    plain.train()
    metrics = bf16.train()
    # Every forward (training and validation) under autocast; the weights stay float32.
    assert bf16.model.autocast_seen and all(bf16.model.autocast_seen)
    assert all(parameter.dtype == torch.float32 for parameter in bf16.model.parameters())
    differences = [(got - want).abs().max() for got, want in zip(weights(bf16), weights(plain))]
    assert 0 < max(differences) < 0.05  # bfloat16 rounding, not another training
    assert metrics["validation_accuracy"] > 0.8


def test_autocast_options_are_checked(tmp_path):
    with pytest.raises(Exception, match="bfloat16"):
        build(tmp_path, "x", type="tune_gradient_descent", autocast="float16")
    with pytest.raises(Exception, match="exclude each other"):
        build(tmp_path, "y", type="tune_gradient_descent", autocast="bfloat16", use_amp=True)


def test_cuda_graphs_on_the_cpu_fall_back_to_eager_with_the_reason(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        trainer = build(
            tmp_path, "graphs", type="tune_gradient_descent", compile={"mode": "reduce-overhead"}
        )
    assert "need a CUDA device; training on cpu, so the model runs eagerly" in caplog.text
    assert trainer._pytorch_model is trainer.model
    trainer.train()
    assert trainer.captures == 0


def test_the_step_is_captured_per_shape_and_again_when_trainable_groups_change(tmp_path, caplog):
    graphs = []

    def counting_backend(graph_module, example_inputs):
        graphs.append(tuple(tuple(x.shape) for x in example_inputs if hasattr(x, "shape")))
        return graph_module.forward

    trainer = build(tmp_path, "compiled", type="tune_gradient_descent")
    trainer.configure_speed(compile={"backend": counting_backend, "dynamic": False})
    batches = {
        rows: {"features": torch.randn(rows, 4), "label": torch.zeros(rows, dtype=torch.long)}
        for rows in (8, 16)
    }

    def new_graphs(rows):
        before = len(graphs)
        trainer.batch_outputs(batches[rows], for_training=True)["loss"].backward()
        return len(graphs) - before

    # The first steps capture (the metric's state goes from empty to a tensor: a warm-up), ...
    assert new_graphs(8) >= 1
    new_graphs(8)
    # ... then a shape is replayed, and another shape (bucket) is captured once.
    assert new_graphs(8) == 0
    assert new_graphs(16) >= 1 and new_graphs(16) == 0
    assert trainer.captures == 1
    shapes = len(graphs)

    trainer.model.encoder.freeze()
    trainer.model.encoder.unfreeze(1)  # gradual unfreezing: only the top group trains
    with caplog.at_level(logging.INFO):
        outputs = trainer.batch_outputs(batches[8], for_training=True)
    assert trainer.captures == 2 and len(graphs) > shapes
    assert "trainable groups changed from (('encoder', (0, 1)),) to (('encoder', (1,)),)" in (
        caplog.text
    )
    outputs["loss"].backward()
    bottom, top = trainer.model.encoder.layers
    assert bottom.weight.requires_grad is False and top.weight.grad is not None
    # The compiled model computes what the model does.
    with torch.no_grad():
        expected = trainer.model(**batches[8])["loss"]
    torch.testing.assert_close(outputs["loss"].detach(), expected)


def test_a_failing_compilation_falls_back_to_eager_with_the_reason(tmp_path, caplog):
    def failing_backend(graph_module, example_inputs):
        raise RuntimeError("no kernels for this")

    trainer = build(tmp_path, "failing", type="tune_gradient_descent")
    trainer.configure_speed(compile={"backend": failing_backend})
    batch = {"features": torch.randn(8, 4), "label": torch.zeros(8, dtype=torch.long)}
    with caplog.at_level(logging.WARNING):
        outputs = trainer.batch_outputs(batch, for_training=True)
    assert "torch.compile failed" in caplog.text and "no kernels for this" in caplog.text
    assert trainer._pytorch_model is trainer.model
    assert outputs["loss"].requires_grad


def test_metric_updates_stay_out_of_the_compiled_graphs(tmp_path):
    # Under CUDA-graph replay a metric's state tensor updated inside the graph is overwritten by
    # the next replay (seen on an H200: every reduce-overhead run failed at its second step).
    operations = []

    def recording_backend(graph_module, example_inputs):
        operations.extend(str(node.target) for node in graph_module.graph.nodes)
        return graph_module.forward

    torch.compiler.reset()
    trainer = build(tmp_path, "metrics", type="tune_gradient_descent")
    trainer.configure_speed(compile={"backend": recording_backend, "dynamic": False})
    batch = {"features": torch.randn(8, 4), "label": torch.tensor([0, 1] * 4)}
    trainer.batch_outputs(batch, for_training=True)["loss"].backward()
    assert any("linear" in operation for operation in operations)  # the model was compiled
    assert not any("scatter_add" in operation for operation in operations), operations
    # ... and the metric still counted the batch, eagerly.
    assert trainer.model.get_metrics()["accuracy"] in {index / 8 for index in range(9)}
    assert sum(map(sum, trainer.model._metrics._confusion.confusion_matrix())) == 8


def test_importing_the_metrics_does_not_import_dynamo():
    # torch._dynamo costs seconds of start-up; only a compiling trainer needs it. Measured
    # against what every `allennlp` command imports anyway (with transformers 5 that already
    # includes torch._dynamo, so there the metrics can only add nothing).
    code = (
        "import sys, allennlp.commands; before = 'torch._dynamo' in sys.modules; "
        "import allennlp_tune.training.metrics.task_metrics, allennlp_tune.training.tune_trainer; "
        "print(before, 'torch._dynamo' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    before, after = result.stdout.split()
    assert after == before
