"""Each fix in allennlp_tune/compat.py, with the failure it prevents."""

import inspect
import os
import subprocess
import sys
from pathlib import Path

import huggingface_hub
import pytest
import torch
import transformers
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data.tokenizers import PretrainedTransformerTokenizer, SpacyTokenizer
from allennlp.training.learning_rate_schedulers import LearningRateScheduler
from allennlp.training.learning_rate_schedulers.pytorch_lr_schedulers import (
    ReduceOnPlateauLearningRateScheduler as AllenNlpReduceOnPlateau,
)

import allennlp_tune  # noqa: F401
from allennlp_tune.compat import ReduceOnPlateauLearningRateScheduler


def optimizer() -> torch.optim.Optimizer:
    return torch.optim.SGD([torch.nn.Parameter(torch.zeros(2))], lr=1.0)


@pytest.mark.skipif(
    "verbose" in inspect.signature(torch.optim.lr_scheduler.ReduceLROnPlateau).parameters,
    reason=f"torch {torch.__version__}'s ReduceLROnPlateau still accepts `verbose` (torch 2.x "
    "removed it), so AllenNLP's own scheduler works here and there is no breakage to show",
)
def test_allennlp_reduce_on_plateau_is_broken_on_this_torch():
    # The reason for the fix: torch 2.x's ReduceLROnPlateau has no `verbose` argument.
    with pytest.raises(TypeError, match="verbose"):
        AllenNlpReduceOnPlateau(optimizer())


def test_reduce_on_plateau_from_config_builds_and_reduces():
    opt = optimizer()
    params = Params({"type": "reduce_on_plateau", "mode": "max", "factor": 0.5, "patience": 0,
                     "verbose": True})  # fmt: skip
    scheduler = LearningRateScheduler.from_params(params=params, optimizer=opt)
    assert isinstance(scheduler, ReduceOnPlateauLearningRateScheduler)
    scheduler.step(1.0)
    scheduler.step(0.5)  # no improvement with patience 0: halve
    assert opt.param_groups[0]["lr"] == pytest.approx(0.5)
    state = scheduler.state_dict()
    fresh = LearningRateScheduler.from_params(
        params=Params({"type": "reduce_on_plateau", "mode": "max"}), optimizer=optimizer()
    )
    fresh.load_state_dict(state)  # checkpoints and --recover keep working
    assert fresh.lr_scheduler.best == pytest.approx(1.0)


def test_missing_spacy_model_is_a_clear_configuration_error():
    with pytest.raises(ConfigurationError, match="spaCy model 'en_core_web_sm' is not installed"):
        SpacyTokenizer(language="en_core_web_sm")


# ---- 5-8: the fixes applied before AllenNLP imports transformers / huggingface_hub ------------
# (allennlp_tune_preimport, through allennlp_tune.pth; the hook itself: test_preimport_hook.py)

REPO = Path(__file__).resolve().parents[1]
BERT = str(REPO / "fixtures" / "models" / "bert-cased")
TRANSFORMERS_5 = int(transformers.__version__.split(".")[0]) >= 5
HUB_1 = int(huggingface_hub.__version__.split(".")[0]) >= 1


def without_the_hook(code: str) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter with allennlp-tune's start-up hook turned off."""
    environment = dict(os.environ, ALLENNLP_TUNE_NO_PREIMPORT="1")
    return subprocess.run(
        [sys.executable, "-c", code], env=environment, capture_output=True, text=True, timeout=300
    )


@pytest.mark.skipif(
    not (HUB_1 or TRANSFORMERS_5),
    reason=f"huggingface_hub {huggingface_hub.__version__} and transformers "
    f"{transformers.__version__} still have what AllenNLP imports (fixes 5 and 6 are no-ops)",
)
def test_allennlp_does_not_import_without_the_hook_on_this_stack():
    # The reason for fixes 5 and 6: `import allennlp.commands` fails on huggingface_hub >= 1.0
    # (HfFolder, Repository) and on transformers 5 (transformers.AdamW).
    result = without_the_hook("import allennlp.commands")
    assert result.returncode != 0
    assert "HfFolder" in result.stderr or "AdamW" in result.stderr, result.stderr[-2000:]


def test_huggingface_hub_has_what_allennlp_imports():  # fix 5
    import allennlp.common.push_to_hf  # noqa: F401
    from huggingface_hub import HfApi, HfFolder, Repository  # noqa: F401

    if getattr(HfFolder, "_allennlp_tune_shim", False):
        assert HfFolder.get_token() == huggingface_hub.get_token()
    if getattr(Repository, "_allennlp_tune_shim", False):
        with pytest.raises(RuntimeError, match="push-to-hf"):
            Repository("/nonexistent", clone_from="user/model")


def test_huggingface_adamw_builds_and_steps():  # fix 6
    from allennlp.training.optimizers import Optimizer

    parameter = torch.nn.Parameter(torch.ones(2))
    optimizer = Optimizer.from_params(
        model_parameters=[("w", parameter)],
        params=Params({"type": "huggingface_adamw", "lr": 0.1, "weight_decay": 0.01}),
    )
    assert isinstance(optimizer, torch.optim.Optimizer)
    parameter.sum().backward()
    optimizer.step()
    assert parameter.detach().lt(1).all()
    if getattr(transformers.AdamW, "_allennlp_tune_shim", False):
        with pytest.raises(ValueError, match="correct_bias"):
            transformers.AdamW([torch.nn.Parameter(torch.ones(1))], correct_bias=False)


def test_pretrained_transformer_tokenizer_tokenizes():  # fixes 7 and 8
    # Without fix 7 (transformers >= 4.44): "add_special_tokens conflicts with the method
    # add_special_tokens in BertTokenizer"; without fix 8 (transformers 5): no `encode_plus`.
    tokenizer = PretrainedTransformerTokenizer(BERT)
    tokens = tokenizer.tokenize("a charming film")
    assert [t.text for t in tokens][0] == "[CLS]" and tokens[-1].text == "[SEP]"
    pair = tokenizer.add_special_tokens(
        tokenizer.tokenize("a")[1:-1], tokenizer.tokenize("b")[1:-1]
    )
    assert [t.text for t in pair] == ["[CLS]", "a", "[SEP]", "b", "[SEP]"]
    assert [t.type_id for t in pair] == [0, 0, 0, 1, 1]
    from allennlp.common import cached_transformers

    built = cached_transformers.get_tokenizer(BERT, add_special_tokens=False)
    assert "add_special_tokens" not in getattr(built, "init_kwargs", {})


@pytest.mark.parametrize("family", ["bert-uncased", "roberta", "albert", "xlm-roberta"])
def test_tokenizers_have_the_pre_5_encoding_methods(family):  # fix 8
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(REPO / "fixtures/models" / family))
    a = tokenizer.encode("hello world", add_special_tokens=False)
    b = tokenizer.encode("foo", add_special_tokens=False)
    assert tokenizer.build_inputs_with_special_tokens(a) == tokenizer.encode("hello world")
    pair = tokenizer("hello world", "foo")["input_ids"]
    assert tokenizer.build_inputs_with_special_tokens(a, b) == pair
    assert tokenizer.encode_plus("hello world", "foo")["input_ids"] == pair
    batch = tokenizer.batch_encode_plus([("hello world", "foo"), ("foo", "hello world")])
    assert batch["input_ids"][0] == pair
    assert tokenizer.batch_encode_plus(["foo"])["input_ids"][0] == tokenizer.encode("foo")


def test_long_inputs_are_folded_by_the_allennlp_indexer():  # fix 8 (build_inputs_...)
    from allennlp.data import Vocabulary
    from allennlp.data.token_indexers import PretrainedTransformerIndexer

    tokens = PretrainedTransformerTokenizer(BERT).tokenize("the film is long " * 5)
    indexer = PretrainedTransformerIndexer(BERT, max_length=8)
    indexed = indexer.tokens_to_indices(tokens, Vocabulary())
    assert len(indexed["segment_concat_mask"]) > len(tokens)  # [CLS] / [SEP] around each fold
