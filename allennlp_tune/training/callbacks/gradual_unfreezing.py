from allennlp.common.checks import ConfigurationError
from allennlp.training.callbacks import TrainerCallback

from allennlp_tune.training.callbacks.adaptation import AdaptationCallback


@TrainerCallback.register("gradual_unfreezing")
class GradualUnfreezing(AdaptationCallback):
    """
    Gradual unfreezing (Howard & Ruder 2018; used by Peters et al. 2019 for SST-2 and NER): in
    epoch 0 only the task head and the scalar mix train; each following epoch one more encoder
    group, from the top, becomes trainable, until all are. Combine with the `discriminative`
    optimizer for per-layer rates.

    Registered as a `TrainerCallback` with name "gradual_unfreezing".

    ```jsonnet
    "trainer": {"callbacks": [{"type": "gradual_unfreezing", "groups_per_epoch": 1}]}
    ```

    Each epoch's trainable groups and learning rates go to `adaptation.jsonl` in the
    serialization directory, to the log, and to TensorBoard when its callback is configured.

    Over an embedder in `mode: "bitfit"` or `mode: "lora"`, an unfrozen group trains only its
    biases or its LoRA matrices (the rest of the encoder never trains): epoch `k` trains the top
    `k` groups' biases / LoRA matrices. A group without any (the embeddings in `lora`, which
    holds LoRA matrices only in the layers' linear modules) adds nothing when it is unfrozen.
    Both modes start with every group trainable, so AllenNLP's optimizer already holds their
    parameters; the `discriminative` optimizer works too (it holds only what the mode trains).

    ```jsonnet
    "token_embedders": {"tokens": {"type": "tune_transformer", "model_name": "bert-base-cased",
                                   "mode": "lora", "lora": {"r": 8, "alpha": 16}}},
    ...
    "trainer": {"callbacks": [{"type": "gradual_unfreezing"}]}
    ```

    # Parameters

    groups_per_epoch : `int`, optional (default = `1`)
        How many more groups become trainable at the start of each epoch.
    start_groups : `int`, optional (default = `0`)
        Groups that train from epoch 0 (0: only the head and the mix).
    freeze_by : `str`, optional (default = `"auto"`)
        `"requires_grad"`, `"masking"`, or `"auto"` (masking under distributed training):
        see `allennlp_tune.training.callbacks.adaptation`.
    """

    def __init__(
        self,
        serialization_dir: str,
        groups_per_epoch: int = 1,
        start_groups: int = 0,
        freeze_by: str = "auto",
    ) -> None:
        super().__init__(serialization_dir, freeze_by=freeze_by)
        if groups_per_epoch < 1 or start_groups < 0:
            raise ConfigurationError(
                "gradual_unfreezing needs groups_per_epoch >= 1 and start_groups >= 0; got "
                f"{groups_per_epoch} and {start_groups}."
            )
        self._groups_per_epoch = groups_per_epoch
        self._start_groups = start_groups

    def groups_for_epoch(self, epoch: int, num_groups: int) -> int:
        return self._start_groups + self._groups_per_epoch * epoch
