import contextlib
import inspect
import logging
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.training import GradientDescentTrainer, Trainer

from allennlp_tune.modules.layer_groups import providers_in
from allennlp_tune.training.metrics.task_metrics import keep_metrics_eager

logger = logging.getLogger(__name__)

AUTOCAST_DTYPES = {"bfloat16": torch.bfloat16}
# torch.compile modes that replay the step as CUDA graphs (one per input shape).
CUDA_GRAPH_MODES = ("reduce-overhead", "max-autotune")

TrainableKey = Tuple[Tuple[str, Tuple[int, ...]], ...]


@Trainer.register("tune_gradient_descent", constructor="from_partial_objects")
class TuneGradientDescentTrainer(GradientDescentTrainer):
    """
    AllenNLP's `gradient_descent` trainer (the same loop, checkpoints, `--recover`, callbacks and
    metrics) with two opt-in speed switches for accelerators. Without them it is
    `gradient_descent`.

    - `autocast: "bfloat16"`: forward passes (training and validation) run under
      `torch.autocast` in bfloat16 on the trainer's device; weights, gradients and the optimizer
      stay float32 and no gradient scaler is needed (`use_amp` is AllenNLP's float16 switch; the
      two exclude each other).
    - `compile`: `torch.compile` options for the model, e.g. `{"mode": "reduce-overhead"}`,
      which captures each input shape's step as CUDA graphs and replays them (pair it with the
      `static_shapes` collator, so that there are few shapes, and `tune_adamw` with `fused`).
      The metric updates stay outside the compiled graphs (`keep_metrics_eager`).
      The compiled model is called in place of the model; `self.model` (and so checkpoints and
      archives) is unchanged. When the trainable layer groups change (`gradual_unfreezing`,
      `stack_then_finetune`: the groups come from the embedders' `trainable_groups()`), the
      compiled graphs are dropped (`torch.compiler.reset()`) and captured again for the new
      groups. CUDA-graph modes on a device that is not CUDA, or a compilation that fails, fall
      back to the eager model with the reason in the log.

    Registered as a `Trainer` with name "tune_gradient_descent".

    ```jsonnet
    "trainer": {
        "type": "tune_gradient_descent",
        "autocast": "bfloat16",
        "compile": {"mode": "reduce-overhead"},
        "optimizer": {"type": "tune_adamw", "lr": 2e-5, "fused": true},
        // ... every option of "gradient_descent"
    }
    ```

    # Parameters

    autocast : `str`, optional (default = `None`)
        `"bfloat16"`, or `None` for none.
    compile : `Dict[str, Any]`, optional (default = `None`)
        Keyword arguments of `torch.compile` (`mode`, `backend`, `dynamic`, `fullgraph`,
        `options`); `{}` compiles with torch's defaults; `None` does not compile.
    Every other parameter is `gradient_descent`'s.
    """

    _autocast_dtype: Optional[torch.dtype] = None
    _compile_options: Optional[Dict[str, Any]] = None
    _compiled: Optional[torch.nn.Module] = None
    _trainable_key: Optional[TrainableKey] = None
    _providers: List[Tuple[str, torch.nn.Module]] = []
    captures = 0  # how many times the compiled model was (re)built

    @classmethod
    def from_partial_objects(
        cls,
        autocast: Optional[str] = None,
        compile: Optional[Dict[str, Any]] = None,
        **kwargs,
    ) -> "TuneGradientDescentTrainer":
        if autocast is not None and kwargs.get("use_amp"):
            raise ConfigurationError(
                "trainer.autocast and trainer.use_amp exclude each other: use_amp is AllenNLP's "
                "float16 autocast (with a gradient scaler), autocast: 'bfloat16' needs none."
            )
        trainer = super().from_partial_objects(**kwargs)
        trainer.configure_speed(autocast, compile)
        return trainer

    def configure_speed(
        self, autocast: Optional[str] = None, compile: Optional[Dict[str, Any]] = None
    ) -> None:
        """Sets the switches (see the class docstring); called by `from_partial_objects`."""
        if autocast is not None and autocast not in AUTOCAST_DTYPES:
            raise ConfigurationError(
                f"trainer.autocast is {autocast!r}; expected one of {sorted(AUTOCAST_DTYPES)} "
                "or null (for float16 use AllenNLP's use_amp)."
            )
        self._autocast_dtype = AUTOCAST_DTYPES.get(autocast)
        self._compile_options = None
        self._compiled = None
        if compile is None:
            return
        if not hasattr(torch, "compiler"):
            logger.warning(
                "tune_gradient_descent: torch %s has no torch.compile / torch.compiler (they need "
                "torch >= 2.1); the model runs eagerly.",
                torch.__version__,
            )
            return
        device = self._device_type()
        if compile.get("mode") in CUDA_GRAPH_MODES and device != "cuda":
            logger.warning(
                "tune_gradient_descent: compile mode %r captures CUDA graphs, which need a CUDA "
                "device; training on %s, so the model runs eagerly.",
                compile["mode"],
                device,
            )
            return
        keep_metrics_eager()
        self._compile_options = dict(compile)
        # Found once: walking the modules on every batch would cost the host time saved.
        self._providers = [
            (path, provider)
            for path, provider in providers_in(self.model)
            if callable(getattr(provider, "trainable_groups", None))
        ]

    def _device_type(self) -> str:
        device = self.cuda_device
        return device.type if isinstance(device, torch.device) else "cpu"

    def trainable_key(self) -> TrainableKey:
        """Each layer-group provider's trainable groups: the compiled graphs are valid for one."""
        return tuple(
            (path, tuple(provider.trainable_groups())) for path, provider in self._providers
        )

    @property
    def _pytorch_model(self):
        model = super()._pytorch_model
        if self._compile_options is None:
            return model
        key = self.trainable_key()
        if self._compiled is None or key != self._trainable_key:
            if self._compiled is not None:
                logger.info(
                    "tune_gradient_descent: the trainable groups changed from %s to %s; "
                    "capturing the step again.",
                    self._trainable_key,
                    key,
                )
                torch.compiler.reset()
            self._compiled = torch.compile(model, **self._compile_options)
            self._trainable_key = key
            self.captures += 1
        return self._compiled

    def batch_outputs(self, batch, for_training: bool) -> Dict[str, torch.Tensor]:
        with self._autocast():
            if self._compile_options is None:
                return super().batch_outputs(batch, for_training)
            try:
                return super().batch_outputs(batch, for_training)
            except Exception as error:  # compilation failures come in many types
                if not _is_compile_error(error):
                    raise
                logger.warning(
                    "tune_gradient_descent: torch.compile failed (%s: %s); the model runs "
                    "eagerly from here on.",
                    type(error).__name__,
                    " ".join(str(error).split())[:500],
                )
                self._compile_options = None
                self._compiled = None
                return super().batch_outputs(batch, for_training)

    def _autocast(self):
        if self._autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self._device_type(), dtype=self._autocast_dtype)


def _is_compile_error(error: Exception) -> bool:
    """An error of dynamo or of a compiler backend, rather than of the model."""
    module = type(error).__module__ or ""
    return module.startswith(("torch._dynamo", "torch._inductor", "torch.fx"))


def expose_switches(trainer_class, names: Sequence[str]) -> None:
    """
    FromParams reads a constructor's parameters from its signature: `trainer_class`'s
    `from_partial_objects` takes `gradient_descent`'s (without its **kwargs), then the switches
    its parent exposed, then `names` as its own signature declares them, all keyword-only.
    """
    base = inspect.signature(GradientDescentTrainer.from_partial_objects.__func__)
    own = inspect.signature(trainer_class.from_partial_objects.__func__)
    switches = tuple(getattr(trainer_class, "_switch_parameters", ())) + tuple(
        own.parameters[name].replace(kind=inspect.Parameter.KEYWORD_ONLY) for name in names
    )
    trainer_class._switch_parameters = switches
    trainer_class.from_partial_objects.__func__.__signature__ = base.replace(
        parameters=[p for p in base.parameters.values() if p.kind is not p.VAR_KEYWORD]
        + list(switches),
        return_annotation=Trainer,
    )


expose_switches(TuneGradientDescentTrainer, ("autocast", "compile"))
