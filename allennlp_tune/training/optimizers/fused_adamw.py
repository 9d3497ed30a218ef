from typing import Any, Dict, List, Optional, Tuple

import torch
from allennlp.training.optimizers import Optimizer, make_parameter_groups


@Optimizer.register("tune_adamw")
class TuneAdamWOptimizer(Optimizer, torch.optim.AdamW):
    """
    `torch.optim.AdamW` as AllenNLP's `adamw`, with the implementation switches AllenNLP's lacks:
    `fused` (one kernel per parameter group instead of one per tensor operation, on CUDA and, in
    recent torch, on the CPU) and `capturable` (the step count lives on the device, so the step
    can be captured in a CUDA graph). Both default off: the same updates as `adamw`, up to the
    rounding of the fused kernel. Usable as the inner optimizer of `discriminative`.

    Registered as an `Optimizer` with name "tune_adamw".

    ```jsonnet
    "optimizer": {"type": "tune_adamw", "lr": 2e-5, "weight_decay": 0.01, "fused": true},
    ```

    # Parameters

    lr, betas, eps, weight_decay, amsgrad, parameter_groups
        As AllenNLP's `adamw`.
    fused : `bool`, optional (default = `False`)
        Use the fused implementation (`torch.optim.AdamW(fused=True)`); every parameter must be
        a floating-point tensor on a device torch has the kernel for.
    capturable : `bool`, optional (default = `False`)
        Keep the step on the device (needed to replay the step in a CUDA graph).
    foreach : `bool`, optional (default = `None`)
        torch's multi-tensor implementation; `None` lets torch choose.
    """

    def __init__(
        self,
        model_parameters: List[Tuple[str, torch.nn.Parameter]],
        parameter_groups: List[Tuple[List[str], Dict[str, Any]]] = None,
        lr: float = 0.001,
        betas: Tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-08,
        weight_decay: float = 0.01,
        amsgrad: bool = False,
        fused: bool = False,
        capturable: bool = False,
        foreach: Optional[bool] = None,
    ) -> None:
        super().__init__(
            params=make_parameter_groups(model_parameters, parameter_groups),
            lr=lr,
            betas=betas,
            eps=eps,
            weight_decay=weight_decay,
            amsgrad=amsgrad,
            # torch refuses fused together with foreach, even foreach=False.
            foreach=None if fused else foreach,
            fused=fused or None,
            capturable=capturable,
        )
