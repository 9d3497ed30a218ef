import bisect
import logging
from typing import Any, Dict, List, Optional

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.data import Batch, Instance
from allennlp.data.data_loaders.data_collator import DataCollator
from allennlp.data.fields import SequenceLabelField, TextField

from allennlp_tune.training.metrics.task_metrics import IGNORE_INDEX

logger = logging.getLogger(__name__)


@DataCollator.register("static_shapes")
class StaticShapesCollator(DataCollator):
    """
    Tensorises batches into few, fixed shapes, so that a compiled step (`tune_gradient_descent`
    with `compile: {"mode": "reduce-overhead"}`) is captured once per shape and replayed after.

    - Lengths: every sequence length of a text (and sequence label) field is padded up to the
      smallest of `lengths` that holds it, or, past those (or without them), to a multiple of
      `multiple`. The padding is AllenNLP's own (masked, so the encoder and pooling ignore it).
    - Rows: with `rows`, a smaller batch (the last of an epoch, say) gets copies of its first
      instance up to `rows`, whose label is -100 (`IGNORE_INDEX`): the cross-entropy loss and
      the classification metrics leave them out. Only for one label per instance (a
      `LabelField`); a batch larger than `rows` is an error.

    Registered as a `DataCollator` with name "static_shapes"; give it to the data loader.

    ```jsonnet
    "data_loader": {
        "batch_sampler": {"type": "bucket", "batch_size": 32},
        "collate_fn": {"type": "static_shapes", "rows": 32, "multiple": 8},
    },
    ```

    # Parameters

    rows : `int`, optional (default = `None`)
        Fill every batch to this many rows; `None` keeps each batch's own size.
    multiple : `int`, optional (default = `8`)
        Lengths are padded to a multiple of this (tensor-core friendly).
    lengths : `List[int]`, optional (default = `None`)
        Explicit bucket lengths (e.g. `[32, 64, 128, 256, 512]`): fewer shapes than multiples of
        8, at the cost of more padding.
    label_field : `str`, optional (default = `"label"`)
        The field whose value padding rows get as -100.
    """

    def __init__(
        self,
        rows: Optional[int] = None,
        multiple: int = 8,
        lengths: Optional[List[int]] = None,
        label_field: str = "label",
    ) -> None:
        if multiple < 1 or (rows is not None and rows < 1):
            raise ConfigurationError(
                f"static_shapes: rows ({rows}) and multiple ({multiple}) must be positive."
            )
        self.rows = rows
        self.multiple = multiple
        self.lengths = sorted(lengths or [])
        self.label_field = label_field

    def padded_length(self, length: int) -> int:
        """The bucket of a sequence `length`."""
        index = bisect.bisect_left(self.lengths, length)
        if index < len(self.lengths):
            return self.lengths[index]
        return -(-length // self.multiple) * self.multiple

    def __call__(self, instances: List[Instance]) -> Dict[str, Any]:
        if self.rows is not None and len(instances) > self.rows:
            raise ConfigurationError(
                f"static_shapes: a batch of {len(instances)} instances, more than rows = "
                f"{self.rows}. Set rows to the data loader's batch size (or larger)."
            )
        batch = Batch(instances)
        padding_lengths = batch.get_padding_lengths()
        for name, field in instances[0].fields.items():
            if isinstance(field, (TextField, SequenceLabelField)):
                padding_lengths[name] = {
                    key: self.padded_length(value) for key, value in padding_lengths[name].items()
                }
        tensors = batch.as_tensor_dict(padding_lengths)
        missing = 0 if self.rows is None else self.rows - len(instances)
        if missing == 0:
            return tensors
        label = tensors.get(self.label_field)
        if isinstance(label, torch.Tensor) and (label.dim() != 1 or label.is_floating_point()):
            raise ConfigurationError(
                f"static_shapes: rows fills batches only for one class label per instance; "
                f"field {self.label_field!r} is a {label.dtype} tensor of shape "
                f"{tuple(label.shape)}. Remove rows (lengths are still padded)."
            )
        filled = _fill_rows(tensors, missing)
        if isinstance(label, torch.Tensor):
            filled[self.label_field][len(instances) :] = IGNORE_INDEX
        return filled


def _fill_rows(value: Any, missing: int) -> Any:
    """`value` (a tensor dict, nested) with `missing` copies of its first row appended."""
    if isinstance(value, torch.Tensor):
        return torch.cat([value, value[:1].expand(missing, *value.shape[1:])])
    if isinstance(value, dict):
        return {key: _fill_rows(item, missing) for key, item in value.items()}
    if isinstance(value, list):
        return value + value[:1] * missing
    return value
