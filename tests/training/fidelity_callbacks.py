"""A callback for the fidelity tests that also runs in distributed workers (which import this
module by name: `include_package=["fidelity_callbacks"]`)."""

import json
import os

import torch
from allennlp.training.callbacks import TrainerCallback

from allennlp_tune.modules.layer_groups import providers_in


@TrainerCallback.register("record_encoder_modes", exist_ok=True)
class RecordEncoderModes(TrainerCallback):
    """
    After every training batch: per group of the first layer-group provider, whether its
    modules are in training mode and whether its weights got a gradient; one JSON line per
    batch in `encoder_modes_<rank>.jsonl`.
    """

    def on_batch(self, trainer, batch_inputs, batch_outputs, batch_metrics, epoch, batch_number,
                 is_training, is_primary=True, **kwargs):  # fmt: skip
        if not is_training:
            return
        _, provider = providers_in(trainer.model)[0]
        encoder = provider.encoder
        modes = {}
        for name, module in encoder.named_modules():
            group = provider._module_groups.get(name)
            if group is not None and any(True for _ in module.parameters(recurse=False)):
                modes.setdefault(provider.layer_group_names()[group], set()).add(module.training)
        graded = [
            name
            for name, params in provider.layer_groups()
            if any(p.grad is not None and p.grad.abs().sum() > 0 for _, p in params)
        ]
        record = {
            "epoch": epoch,
            "training": {g: sorted(v) for g, v in modes.items()},
            "frozen": provider.is_frozen,
            "graded": graded,
        }
        rank = torch.distributed.get_rank() if torch.distributed.is_initialized() else 0
        path = os.path.join(self.serialization_dir, f"encoder_modes_{rank}.jsonl")
        with open(path, "a") as log:
            log.write(json.dumps(record) + "\n")
