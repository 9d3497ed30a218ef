"""Fixes for running AllenNLP 2.10.1 on the pinned modern stack (torch 2.x, spaCy 3.8).

Imported first by `allennlp_tune/__init__.py`, so `--include-package allennlp_tune` or the
`.allennlp_plugins` file applies them before any component is built. Each fix is small, says
what breaks without it, and has a test in `tests/test_compat.py` that fails without it.

1. `reduce_on_plateau`: AllenNLP passes `verbose=` to `torch.optim.lr_scheduler.ReduceLROnPlateau`,
   which torch 2.x removed, so every config using it (allennlp-models' ESIM among them) fails at
   construction. We re-register the scheduler under the same name; `verbose` is still accepted
   in configs and logs learning-rate reductions through the standard logger instead.
2. Missing spaCy models: AllenNLP's `get_spacy_model` tries `spacy download` when a model is not
   installed, which fails with a network traceback on a machine that reaches only package
   registries. We raise a `ConfigurationError` naming the model and the fixes instead.
"""

import logging
from typing import List, Union

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.training.learning_rate_schedulers import LearningRateScheduler
from allennlp.training.learning_rate_schedulers.pytorch_lr_schedulers import (
    _PyTorchLearningRateSchedulerWithMetricsWrapper,
)

logger = logging.getLogger(__name__)


@LearningRateScheduler.register("reduce_on_plateau", exist_ok=True)
class ReduceOnPlateauLearningRateScheduler(_PyTorchLearningRateSchedulerWithMetricsWrapper):
    """
    AllenNLP's `reduce_on_plateau` scheduler, without the `verbose` argument that torch 2.x's
    `ReduceLROnPlateau` no longer accepts. Same name, same parameters:

    ```jsonnet
    "learning_rate_scheduler": {"type": "reduce_on_plateau", "mode": "max", "factor": 0.5,
                                "patience": 0}
    ```
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        verbose: bool = False,
        threshold_mode: str = "rel",
        threshold: float = 1e-4,
        cooldown: int = 0,
        min_lr: Union[float, List[float]] = 0,
        eps: float = 1e-8,
    ) -> None:
        lr_scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(
            optimizer=optimizer,
            mode=mode,
            factor=factor,
            patience=patience,
            threshold_mode=threshold_mode,
            threshold=threshold,
            cooldown=cooldown,
            min_lr=min_lr,
            eps=eps,
        )
        self._verbose = verbose
        super().__init__(lr_scheduler)

    def step(self, metric: float = None) -> None:
        before = [group["lr"] for group in self.lr_scheduler.optimizer.param_groups]
        super().step(metric)
        after = [group["lr"] for group in self.lr_scheduler.optimizer.param_groups]
        if self._verbose and before != after:
            logger.info("reduce_on_plateau: learning rates %s -> %s", before, after)


def _get_spacy_model_offline(
    spacy_model_name: str, pos_tags: bool = True, parse: bool = False, ner: bool = False
):
    import spacy
    from allennlp.common import util

    options = (spacy_model_name, pos_tags, parse, ner)
    if options not in util.LOADED_SPACY_MODELS:
        disable = ["vectors", "textcat"]
        if not pos_tags:
            disable.append("tagger")
        if not parse:
            disable.append("parser")
        if not ner:
            disable.append("ner")
        try:
            spacy_model = spacy.load(spacy_model_name, disable=disable)
        except OSError as error:
            raise ConfigurationError(
                f"The spaCy model {spacy_model_name!r} is not installed, and allennlp-tune does "
                "not download models at run time. Either use a tokenizer that needs no model "
                '(allennlp-tune\'s readers default to {"type": "spacy_rules"}, spaCy\'s rule-based '
                'English tokenizer; "whitespace" for pre-tokenised text; "pretrained_transformer" '
                "for BERT), or install the model's wheel"
                f" into this environment (pip install {spacy_model_name}-"
                "<version>-py3-none-any.whl from a machine that has it)."
            ) from error
        util.LOADED_SPACY_MODELS[options] = spacy_model
    return util.LOADED_SPACY_MODELS[options]


def _patch_spacy_loader() -> None:
    from allennlp.common import util
    from allennlp.data.tokenizers import sentence_splitter, spacy_tokenizer

    for module in (util, spacy_tokenizer, sentence_splitter):
        module.get_spacy_model = _get_spacy_model_offline


_patch_spacy_loader()
