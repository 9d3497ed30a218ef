import math
from typing import Any, Iterator, Optional

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.data import DataLoader, TensorDict
from allennlp.nn.util import move_to_device
from allennlp.training import Trainer

from allennlp_tune.training.trainer_access import (
    is_distributed,
    replace_validation_data_loader,
    validation_data_loader,
)
from allennlp_tune.training.tune_trainer import TuneGradientDescentTrainer, expose_switches


class FeatureBatches(DataLoader):
    """
    Batches of a model's frozen features in place of a data loader's instances: on first use it
    runs `model.frozen_features(**batch)` once over every batch of `source` (the encoder's pass,
    or the pooled-feature cache read) and keeps the features (float16, as cached) and the
    labels as two tensors; then each epoch is `batch_size` rows at a time of those tensors,
    shuffled for training, as `{"features": ..., "label": ...}` batches on the target device.

    The first use falls inside the trainer's first epoch (its `len()` call), so that epoch's
    time in `cost.json` holds the pass, as a cached epoch's first does.
    """

    def __init__(
        self, source: DataLoader, model: torch.nn.Module, batch_size: int, shuffle: bool
    ) -> None:
        self._source = source
        self._model = model
        self._batch_size = batch_size
        self._shuffle = shuffle
        self._device: Optional[torch.device] = None
        self._features: Optional[torch.Tensor] = None
        self._labels: Optional[torch.Tensor] = None

    def _extract(self) -> None:
        features, labels = [], []
        with torch.no_grad():
            for batch in self._source:
                # (batch_size, num_sentences, num_layers, dim)
                features.append(self._model.frozen_features(**batch).to("cpu", torch.float16))
                if "label" not in batch:
                    raise ConfigurationError(
                        "tune_frozen_features: a batch without labels; every training and "
                        "validation instance needs its label."
                    )
                labels.append(batch["label"].cpu())
        if not features:
            raise ConfigurationError("tune_frozen_features: the data loader gave no batch.")
        self._features = torch.cat(features)
        self._labels = torch.cat(labels)

    def __len__(self) -> int:
        if self._features is None:
            self._extract()
        return math.ceil(len(self._features) / self._batch_size)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[TensorDict]:
        if self._features is None:
            self._extract()
        assert self._features is not None and self._labels is not None
        count = len(self._features)
        order = torch.randperm(count) if self._shuffle else torch.arange(count)
        # The steps between these batches are products of a few thousand numbers, where torch's
        # intra-op threads only synchronise: one thread while the epoch runs (on 2 busy cores,
        # 0.6 s an SST-2 8k epoch against 10-20 s with two; bench/README.md), then as before.
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            for start in range(0, count, self._batch_size):
                rows = order[start : start + self._batch_size]
                batch = {"features": self._features[rows], "label": self._labels[rows]}
                yield move_to_device(batch, self._device) if self._device is not None else batch
        finally:
            torch.set_num_threads(threads)

    def iter_instances(self):
        return self._source.iter_instances()

    def index_with(self, vocab) -> None:
        self._source.index_with(vocab)

    def set_target_device(self, device: torch.device) -> None:
        self._device = device
        self._source.set_target_device(device)


@Trainer.register("tune_frozen_features", constructor="from_partial_objects")
class FrozenFeaturesTrainer(TuneGradientDescentTrainer):
    """
    `tune_gradient_descent` (so AllenNLP's `gradient_descent`: the same epochs, validation,
    early stopping, checkpoints, callbacks, metrics and archive) for a model that reads frozen
    features (`tune_frozen_head`): its data loaders are wrapped in `FeatureBatches`, so the
    frozen features of every instance are computed (or read from the pooled-feature cache) once
    in the first epoch, and every step after that is one index into a tensor, `feature_batch_size`
    rows at a time. AllenNLP's per-instance work (padding, tensorising, the cache's keys and
    reads, every epoch) dominates such a light head's epoch otherwise.

    Registered as a `Trainer` with name "tune_frozen_features".

    ```jsonnet
    "trainer": {
        "type": "tune_frozen_features",
        "feature_batch_size": 64,
        "optimizer": {"type": "adamw", "lr": 3e-3},
        "num_epochs": 40,
        "patience": 5,
        "validation_metric": "+accuracy",
        // ... every option of "gradient_descent"
    }
    ```

    # Parameters

    feature_batch_size : `int`, optional (default = `64`)
        Rows per training step over the features. The data loader's own batch size is that of
        the first epoch's pass through the encoder.
    Every other parameter is `tune_gradient_descent`'s. Not distributed: the features of one
    process's data are one tensor.
    """

    @classmethod
    def from_partial_objects(
        cls, feature_batch_size: int = 64, **kwargs: Any
    ) -> "FrozenFeaturesTrainer":
        if not isinstance(feature_batch_size, int) or feature_batch_size < 1:
            raise ConfigurationError(
                f"trainer.feature_batch_size is {feature_batch_size!r}; expected an integer >= 1."
            )
        trainer = super().from_partial_objects(**kwargs)
        trainer.read_features(feature_batch_size)
        return trainer

    def read_features(self, feature_batch_size: int) -> None:
        """Wraps the data loaders (see the class docstring); called by `from_partial_objects`."""
        if is_distributed(self):
            raise ConfigurationError(
                "trainer tune_frozen_features trains from one process's features; for several "
                "workers use gradient_descent."
            )
        if not callable(getattr(self.model, "frozen_features", None)):
            raise ConfigurationError(
                f"trainer tune_frozen_features needs a model with frozen_features "
                f"(tune_frozen_head), not {type(self.model).__name__}; use gradient_descent."
            )
        self.data_loader = FeatureBatches(
            self.data_loader, self.model, feature_batch_size, shuffle=True
        )
        self.data_loader.set_target_device(self.cuda_device)
        validation = validation_data_loader(self)
        if validation is not None:
            batches = FeatureBatches(validation, self.model, feature_batch_size, shuffle=False)
            batches.set_target_device(self.cuda_device)
            replace_validation_data_loader(self, batches)


expose_switches(FrozenFeaturesTrainer, ("feature_batch_size",))
