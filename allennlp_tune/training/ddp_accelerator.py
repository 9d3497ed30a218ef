from typing import Optional, Tuple, Union

import torch
from allennlp.nn.parallel import DdpAccelerator, DdpWrappedModel, TorchDdpAccelerator

from allennlp_tune.modules.layer_groups import providers_in


@DdpAccelerator.register("tune_torch")
class TuneTorchDdpAccelerator(TorchDdpAccelerator):
    """
    AllenNLP's `torch` DDP accelerator for models whose embedders start frozen (feature
    extraction, stack-then-finetune, gradual unfreezing from a frozen start). Before wrapping,
    it switches every layer-group provider (the `tune_*` embedders) to freezing by gradient
    masking (`freeze_by_masking()`): their weights keep `requires_grad`, so DDP synchronises
    them once a callback unfreezes them, while frozen groups still run in eval mode and, while
    the whole encoder is frozen, without autograd and from the feature cache. The callbacks
    (`gradual_unfreezing`, `stack_then_finetune`) then freeze by masking, as under any
    distributed training. Frozen groups get no gradient, so `find_unused_parameters` defaults
    to true here.

    Registered as a `DdpAccelerator` with name "tune_torch".

    ```jsonnet
    "distributed": {
        "cuda_devices": [0, 1],
        "ddp_accelerator": {"type": "tune_torch"},
    },
    ```

    # Parameters

    find_unused_parameters : `bool`, optional (default = `True`)
        Passed to `torch.nn.parallel.DistributedDataParallel`.
    """

    def __init__(
        self,
        *,
        find_unused_parameters: bool = True,
        local_rank: Optional[int] = None,
        world_size: Optional[int] = None,
        cuda_device: Union[torch.device, int] = -1,
    ) -> None:
        super().__init__(
            find_unused_parameters=find_unused_parameters,
            local_rank=local_rank,
            world_size=world_size,
            cuda_device=cuda_device,
        )

    def wrap_model(self, model) -> Tuple[torch.nn.Module, DdpWrappedModel]:
        for _, provider in providers_in(model):
            if callable(getattr(provider, "freeze_by_masking", None)):
                provider.freeze_by_masking()
        return super().wrap_model(model)
