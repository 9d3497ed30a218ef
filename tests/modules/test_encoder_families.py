"""
`tune_transformer` over the encoder families users bring besides BERT: RoBERTa, XLM-R,
DeBERTa-v2 (v3 uses the same classes), ELECTRA, DistilBERT, ALBERT and MPNet, each a tiny random
fixture with its own tokenizer (`scripts/fixture_models.py`, `FAMILIES`), and ModernBERT where the
installed transformers has it (>= 4.48; `VERSIONED`, built here, skipped with the reason
elsewhere). Each family's layer groups, token types, feature cache, and one epoch of `fe` and
`ft` training. ModernBERT's own checks are in `test_modernbert.py`.
"""

import json
import logging
import sys
from pathlib import Path
from typing import Dict, List, Optional

import pytest
import torch
from allennlp.commands import main as allennlp_main
from allennlp.common.checks import ConfigurationError
from allennlp.data import Batch, Instance, Vocabulary
from allennlp.data.fields import TextField
from allennlp.data.token_indexers import PretrainedTransformerIndexer
from allennlp.data.tokenizers import PretrainedTransformerTokenizer
from transformers import AutoModel, AutoTokenizer
from transformers.modeling_outputs import BaseModelOutput

import allennlp_tune  # noqa: F401  (registers the components, sets the ext var defaults)
from allennlp_tune.modules.token_embedders import TuneTransformerEmbedder

from .conftest import REPO_ROOT, _generated_models, _generated_versioned_families, fixture_script

# family folder -> the module path of its list of layers (ALBERT: of its shared weight groups).
LAYER_LISTS = {
    "roberta": "encoder.layer",
    "xlm-roberta": "encoder.layer",
    "deberta-v2": "encoder.layer",
    "electra": "encoder.layer",
    "distilbert": "transformer.layer",
    "albert": "encoder.albert_layer_groups",
    "mpnet": "encoder.layer",
    "modernbert": "layers",  # transformers >= 4.48
}
FAMILIES = sorted(LAYER_LISTS)


def _deberta_v2_breaks_on_this_numpy() -> bool:
    """transformers < 4.26's DeBERTa-v2 buckets relative positions with `np.int`, which numpy
    1.24 removed: on such a stack (stock AllenNLP 2.10.1 with numpy 1.26) its forward fails."""
    import inspect

    import numpy
    from transformers.models.deberta_v2 import modeling_deberta_v2

    return not hasattr(numpy, "int") and "np.int)" in inspect.getsource(modeling_deberta_v2)


def _unavailable(family: str) -> Optional[str]:
    """Why the installed transformers has no `family` (ModernBERT before 4.48), else `None`."""
    script = fixture_script()
    return script.family_unavailable(family) if family in script.VERSIONED else None


# Every family, skipped where the installed transformers lacks it.
ALL_FAMILIES = [
    pytest.param(family, marks=pytest.mark.skip(reason=_unavailable(family)))
    if _unavailable(family)
    else family
    for family in FAMILIES
]


def runnable(family: str, param=None):
    """`family` as a test parameter (`param`, else the name) skipped where its forward pass
    fails on the installed stack (DeBERTa-v2 with `np.int`)."""
    if family != "deberta-v2":
        return family if param is None else param
    return pytest.param(
        family,
        marks=pytest.mark.skipif(
            _deberta_v2_breaks_on_this_numpy(),
            reason="this transformers' DeBERTa-v2 uses np.int, which this numpy (>= 1.24) "
            "no longer has (fixed in transformers 4.26)",
        ),
    )


# The families whose forward pass runs on the installed stack.
RUNNING_FAMILIES = [runnable(family, param) for family, param in zip(FAMILIES, ALL_FAMILIES)]
# Families whose model has token type embeddings to choose from (type_vocab_size > 1).
TYPED = {"electra", "albert"}
PAIR = ("A man is playing a guitar", "The dog is eating the bread")
SENTENCES = ["a charming and funny film", "the plot is thin and silly", "Two kids are playing"]


@pytest.fixture(scope="module")
def family_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """
    `fixtures/models`, or the same fixtures generated when a family's folder is missing; with
    the `VERSIONED` families this transformers has (not committed: the locked stack cannot
    write them) generated beside links to the committed ones.
    """
    committed = REPO_ROOT / "fixtures" / "models"
    versioned = fixture_script().versioned_families()
    fixed = [family for family in FAMILIES if family not in fixture_script().VERSIONED]
    if not all((committed / family / "config.json").is_file() for family in fixed):
        return _generated_models(tmp_path_factory.mktemp("family_models"))
    if not versioned:
        return committed
    out = tmp_path_factory.mktemp("family_models")
    for family in fixed:
        (out / family).symlink_to(committed / family, target_is_directory=True)
    return _generated_versioned_families(out)


def _encoder_parameters(embedder: TuneTransformerEmbedder) -> Dict[str, torch.nn.Parameter]:
    return {
        name: parameter
        for name, parameter in embedder.named_parameters()
        if name.startswith("transformer_model.")
    }


def _pair_tensors(path: str) -> Dict[str, torch.Tensor]:
    """The `pretrained_transformer` indexer's output for `PAIR`, jointly encoded (as readers do)."""
    tokenizer = PretrainedTransformerTokenizer(path, add_special_tokens=False)
    tokens = tokenizer.add_special_tokens(*(tokenizer.tokenize(text) for text in PAIR))
    field = TextField(tokens, {"t": PretrainedTransformerIndexer(path)})
    batch = Batch([Instance({"text": field})])
    batch.index_instances(Vocabulary())
    return batch.as_tensor_dict()["text"]["t"]


@pytest.mark.parametrize("family", ALL_FAMILIES)
def test_layer_groups_cover_every_encoder_parameter_once(family, family_models, caplog):
    path = str(family_models / family)
    with caplog.at_level(logging.INFO):
        embedder = TuneTransformerEmbedder(path)
    num_layers = embedder.encoder.config.num_hidden_layers
    assert len(embedder.scalar_mix_parameters()) == num_layers + 1 + 1  # weights + gamma
    groups = embedder.layer_groups()
    names = [name for _, parameters in groups for name, _ in parameters]
    assert sorted(names) == sorted(_encoder_parameters(embedder))  # each exactly once
    assert len(names) == len(set(names))
    layer_list = f"transformer_model.{LAYER_LISTS[family]}"
    below = [name for name, _ in groups[0][1]]
    assert groups[0][0] == "embeddings" and below
    assert not any(name.startswith(layer_list + ".") for name in below)

    if family == "albert":
        # Three layers, one set of weights: one group for the shared stack.
        assert num_layers == 3 and embedder.layer_group_names() == ["embeddings", "layers_0-2"]
        stack = [name for name, _ in groups[1][1]]
        assert stack and all(name.startswith(layer_list + ".0.") for name in stack)
        assert "transformer_model.encoder.embedding_hidden_mapping_in.weight" in below
        assert "layers_0-2" in caplog.text and "share 1 set(s) of weights" in caplog.text
        return
    assert embedder.layer_group_names() == ["embeddings"] + [
        f"layer_{index}" for index in range(num_layers)
    ]
    for index, (_, parameters) in enumerate(groups[1:]):
        inside = [name for name, _ in parameters if name.startswith(f"{layer_list}.{index}.")]
        assert inside, f"layer_{index} has none of {layer_list}.{index}'s parameters"
        # What sits above the layer list (DeBERTa's relative position table, ModernBERT's
        # final_norm) joins the top group (MPNet's position bias, read by every layer, joins the
        # embeddings); nothing else lands outside its layer.
        others = sorted(set(name for name, _ in parameters) - set(inside))
        assert index == num_layers - 1 or not others, others


def test_albert_gradual_unfreezing_moves_the_shared_stack_as_one_group(family_models):
    embedder = TuneTransformerEmbedder(str(family_models / "albert"))
    groups = dict(embedder.layer_groups())
    assert embedder.is_frozen
    embedder.unfreeze(1)
    assert embedder.trainable_groups() == [1]
    assert all(parameter.requires_grad for _, parameter in groups["layers_0-2"])
    assert not any(parameter.requires_grad for _, parameter in groups["embeddings"])
    embedder.unfreeze(2)
    assert all(parameter.requires_grad for _, parameter in embedder.encoder.named_parameters())
    with pytest.raises(ValueError, match="has 2 groups"):
        embedder.unfreeze(3)


@pytest.mark.parametrize("family", RUNNING_FAMILIES)
def test_a_jointly_encoded_pair_is_embedded_as_the_familys_own_tokenizer_does(
    family, family_models
):
    path = str(family_models / family)
    tensors = _pair_tensors(path)
    hf_tokenizer = AutoTokenizer.from_pretrained(path)
    # transformers 5's AlbertTokenizer no longer returns token_type_ids unless asked (its
    # model_input_names dropped them); AllenNLP's indexer gives them, as ALBERT was trained.
    typed = {"return_token_type_ids": True} if family in TYPED else {}
    encoded = hf_tokenizer(*PAIR, return_tensors="pt", **typed)
    # AllenNLP's pair layout is the family's, with no unknown pieces.
    assert tensors["token_ids"].tolist() == encoded["input_ids"].tolist()
    assert hf_tokenizer.unk_token_id not in encoded["input_ids"][0].tolist()
    model = AutoModel.from_pretrained(path).eval()
    with torch.no_grad():
        expected = model(**encoded).last_hidden_state

    embedder = TuneTransformerEmbedder(path, layers="top").eval()
    with torch.no_grad():
        output = embedder(**tensors)
        untyped = embedder(**dict(tensors, type_ids=torch.zeros_like(tensors["type_ids"])))
    torch.testing.assert_close(output, expected)
    if family in TYPED:
        assert int(tensors["type_ids"].max()) == 1
        assert not torch.allclose(output, untyped)  # the second sentence's type is used
    else:  # no segment embeddings (or one type): the separators alone mark the pair
        torch.testing.assert_close(output, untyped)


def test_a_type_id_beyond_the_models_types_names_them(family_models):
    path = str(family_models / "electra")
    tensors = _pair_tensors(path)
    tensors["type_ids"] = tensors["type_ids"] * 2
    with pytest.raises(ConfigurationError, match="token type id 2, but ElectraModel has 2"):
        TuneTransformerEmbedder(path)(**tensors)


@pytest.mark.parametrize("family", RUNNING_FAMILIES)
def test_feature_cache_serves_the_second_pass(family, family_models, wordpiece_batch, tmp_path):
    path = str(family_models / family)
    tensors = wordpiece_batch(SENTENCES, model=path)
    reference = TuneTransformerEmbedder(path).eval()(**tensors)
    cached = TuneTransformerEmbedder(path, feature_cache={"directory": str(tmp_path)}).eval()
    keep = tensors["mask"].unsqueeze(-1).expand_as(reference)
    for _ in range(2):
        torch.testing.assert_close(cached(**tensors)[keep], reference[keep], atol=1e-2, rtol=1e-2)
    assert cached.feature_cache.writes == len(SENTENCES)
    assert cached.feature_cache.hits == len(SENTENCES)


def test_without_a_layer_list_the_mix_works_over_one_group(bert_path, wordpiece_batch, caplog):
    original = TuneTransformerEmbedder._find_layer_list
    TuneTransformerEmbedder._find_layer_list = lambda self: None
    try:
        with caplog.at_level(logging.WARNING):
            embedder = TuneTransformerEmbedder(bert_path)
    finally:
        TuneTransformerEmbedder._find_layer_list = original
    assert "found no torch.nn.ModuleList of num_hidden_layers = 4 layers in BertModel" in (
        caplog.text
    )
    assert embedder.layer_group_names() == ["encoder"]
    ((name, parameters),) = embedder.layer_groups()
    assert sorted(n for n, _ in parameters) == sorted(_encoder_parameters(embedder))
    assert embedder.eval()(**wordpiece_batch()).shape[-1] == 16  # fe needs only hidden states
    embedder.unfreeze(1)
    assert all(parameter.requires_grad for _, parameter in parameters)


@pytest.mark.parametrize("returned", [None, 2])
def test_an_encoder_without_every_hidden_state_is_a_configuration_error(
    bert_path, wordpiece_batch, returned
):
    embedder = TuneTransformerEmbedder(bert_path).eval()
    model = embedder.transformer_model
    forward = model.forward

    def without_hidden_states(**kwargs):
        output = forward(**kwargs)
        states = None if returned is None else output.hidden_states[:returned]
        return BaseModelOutput(last_hidden_state=output.last_hidden_state, hidden_states=states)

    model.forward = without_hidden_states
    found = "none" if returned is None else str(returned)
    with pytest.raises(ConfigurationError, match=f"BertModel returned {found} hidden_states"):
        embedder(**wordpiece_batch())


# ---- one epoch of fe and ft per family, with the grid's configs ------------------------------

# fe: frozen encoder, all layers mixed, BCN on SST-2, features cached; ft: the top layer's [CLS]
# and a softmax on SICK-E, a jointly encoded pair, so the pair's type ids reach every family.
CELLS = {"fe": "sst2_bert_fe.jsonnet", "ft": "sick_e_bert_ft.jsonnet"}
# ALBERT's layer adds its feed-forward output (a Linear with bias) to the residual and
# normalizes, with no dropout module in between, so AllenNLP's NormalizationBiasVerification
# (which sees only the order of module calls, not the residual) rejects any ALBERT being
# fine-tuned: a false positive, which the fine-tuning trainers switch off
# (allennlp_tune/configs/trainers.libsonnet). The cells below train ALBERT as shipped.
EMBEDDER = "_text_field_embedder.token_embedder_tokens."


def _train(
    monkeypatch, tmp_path: Path, model: Path, config: str, epochs: int = 1, overrides: str = ""
) -> Path:
    env = {
        "TUNE_DATA_DIR": str(REPO_ROOT / "fixtures" / "data"),
        "TUNE_BERT_MODEL": str(model),
        "TUNE_EPOCHS": str(epochs),
        "TUNE_BATCH_SIZE": "4",
        "TUNE_LR": "1e-3",  # a few steps: large enough that every weight visibly moves
        "TUNE_FEATURE_CACHE": "true",
        "TUNE_FEATURE_CACHE_DIR": str(tmp_path / "cache"),
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    out = tmp_path / "run"
    argv = ["allennlp", "train", str(REPO_ROOT / "training_config" / config), "-s", str(out)]
    if overrides:
        argv += ["-o", overrides]
    monkeypatch.setattr(sys, "argv", argv)
    torch.set_num_threads(1)
    allennlp_main(prog="allennlp")
    return out


def _changed(trained: Dict[str, torch.Tensor], model: Path) -> Dict[str, bool]:
    """Encoder parameter name -> whether training changed it (all of the model's are there)."""
    original = AutoModel.from_pretrained(str(model)).state_dict()
    result = {}
    for name, value in trained.items():
        if name.startswith(EMBEDDER + "transformer_model."):
            key = name[len(EMBEDDER + "transformer_model.") :]
            result[key] = not torch.equal(value, original[key])
    assert result and set(result) <= set(original)
    return result


@pytest.mark.parametrize("mode", sorted(CELLS))
@pytest.mark.parametrize("family", RUNNING_FAMILIES)
def test_family_trains_frozen_and_fine_tuned(family, mode, family_models, tmp_path, monkeypatch):
    model = family_models / family
    out = _train(monkeypatch, tmp_path, model, CELLS[mode])
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["epoch"] == 0 and 0.0 <= metrics["best_validation_accuracy"] <= 1.0
    trained = torch.load(out / "best.th", map_location="cpu")
    changed = _changed(trained, model)
    num_layers = AutoModel.from_pretrained(str(model)).config.num_hidden_layers
    mix = [name for name in trained if name.startswith(EMBEDDER + "_scalar_mix.scalar_param")]
    if mode == "fe":
        assert len(mix) == num_layers + 1
        assert not any(changed.values()), [name for name, moved in changed.items() if moved]
        assert any(trained[name].abs().sum() > 0 for name in mix)  # the mix itself trained
        assert list((tmp_path / "cache").rglob("*")), "the feature cache was not written"
    else:  # BERT's fine-tuning recipe: the top layer, no mix
        assert mix == []
        # transformers < 4.31 keeps `position_ids` as a persistent buffer, so it is in the
        # trained state dict; a buffer is not a parameter and never trains.
        buffers = {name for name, _ in AutoModel.from_pretrained(str(model)).named_buffers()}
        unchanged = [name for name, moved in changed.items() if not moved and name not in buffers]
        assert unchanged == [], unchanged


def test_albert_trains_under_gradual_unfreezing(family_models, tmp_path, monkeypatch):
    """Epoch 0: the head; 1: + the shared layer stack; 2: + the embeddings."""
    overrides = {
        "trainer.optimizer": {
            "type": "discriminative",
            "decay": 0.4,
            "head_lr": 1e-3,
            "optimizer": {"type": "adamw", "lr": 1e-3},
        },
        "trainer.callbacks": [{"type": "gradual_unfreezing"}],
    }
    out = _train(
        monkeypatch, tmp_path, family_models / "albert", CELLS["ft"], 3, json.dumps(overrides)
    )
    phases: List[Dict] = [
        json.loads(line) for line in (out / "adaptation.jsonl").read_text().splitlines()
    ]
    # (a record is also written for the epoch after the last)
    by_epoch = {phase["epoch"]: phase["trainable_group_names"] for phase in phases}
    assert [by_epoch[epoch] for epoch in range(3)] == [
        [],
        ["layers_0-2"],
        ["embeddings", "layers_0-2"],
    ]
    assert json.loads((out / "metrics.json").read_text())["epoch"] == 2


@pytest.mark.parametrize("family", ["roberta", "distilbert", "electra"])
def test_whether_type_ids_reach_the_model_is_decided_by_its_config(
    family, family_models, monkeypatch
):
    # Issue #20: the choice used to read type_ids.max() from the device on every batch. Now a
    # model without types never reads the ids, and one with types gets them unread off the CPU.
    path = str(family_models / family)
    tensors = _pair_tensors(path)
    embedder = TuneTransformerEmbedder(path, layers="top").eval()
    given = []
    original = type(embedder.transformer_model).forward

    def recording(model, *args, **kwargs):
        given.append(kwargs.get("token_type_ids"))
        return original(model, *args, **kwargs)

    monkeypatch.setattr(type(embedder.transformer_model), "forward", recording)
    reads = []
    monkeypatch.setattr(torch.Tensor, "max", lambda *a, **k: reads.append(a) or a[0].amax())
    with torch.no_grad():
        embedder(**tensors)
    if family in TYPED:
        assert given[0] is tensors["type_ids"] and len(reads) == 1  # checked on the CPU
    else:
        assert given == [None] and reads == []
