"""`scripts/fixture_models.py`: the tiny BERT and ELMo fixtures load and are deterministic."""

import importlib.util
import logging
import sys
from pathlib import Path
from types import ModuleType
from typing import List

import pytest
import torch

WORDS: List[str] = ["A", "man", "is", "playing", "a", "guitar", "Peter", "Blackburn", ",", "."]
SENTENCE = "Peter Blackburn , a man , is playing a guitar ."


def _load_script() -> ModuleType:
    path = Path(__file__).resolve().parents[1] / "scripts" / "fixture_models.py"
    spec = importlib.util.spec_from_file_location("fixture_models", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("fixture_models", module)
    spec.loader.exec_module(module)
    return module


fixture_models = _load_script()


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("models")
    fixture_models.make_model_fixtures(out, WORDS)
    return out


def _files(root: Path) -> dict:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _transformers_major() -> int:
    import transformers

    return int(transformers.__version__.split(".")[0])


def _weight_files() -> List[str]:
    """What `save_weights` writes with the installed transformers: both formats where it can."""
    import inspect

    from transformers import PreTrainedModel

    if "safe_serialization" in inspect.signature(PreTrainedModel.save_pretrained).parameters:
        return ["model.safetensors", "pytorch_model.bin"]
    if _transformers_major() >= 5:
        return ["model.safetensors"]  # transformers 5 writes (and reads) nothing else
    return ["pytorch_model.bin"]  # transformers < 4.21 (the stock AllenNLP 2.10.1 stack)


def test_writes_expected_files(models: Path) -> None:
    names = set(_files(models))
    written = [*fixture_models.FAMILIES, *fixture_models.versioned_families()]
    for model in ["bert-cased", "bert-uncased", *written]:
        for name in ["config.json", *_weight_files(), "tokenizer_config.json"]:
            assert f"{model}/{name}" in names
    for model in ("bert-cased", "bert-uncased"):
        assert f"{model}/vocab.txt" in names
        if _transformers_major() < 5:  # 5 keeps the special tokens in tokenizer_config.json
            assert f"{model}/special_tokens_map.json" in names
    assert {"elmo/options.json", "elmo/weights.hdf5"} <= names


def test_two_runs_are_byte_identical(models: Path, tmp_path: Path, caplog) -> None:
    with caplog.at_level(logging.INFO, logger="fixture_models"):
        fixture_models.make_model_fixtures(tmp_path, WORDS)
    assert _files(tmp_path) == _files(models)
    for family in fixture_models.VERSIONED:  # the skipped ones are logged with the reason
        reason = fixture_models.family_unavailable(family)
        assert (reason is not None) == (f"skipping the {family} fixture: {reason}" in caplog.text)


@pytest.mark.parametrize("family", sorted(fixture_models.VERSIONED))
def test_a_versioned_family_is_written_exactly_where_transformers_has_it(
    models: Path, family: str
) -> None:
    import transformers
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    config_class, first_version, _ = fixture_models.VERSIONED[family]
    reason = fixture_models.family_unavailable(family)
    if reason is not None:
        assert not (models / family).exists()
        assert first_version in reason and transformers.__version__ in reason
        assert not hasattr(transformers, config_class)
        pytest.skip(reason)
    assert type(AutoConfig.from_pretrained(str(models / family))).__name__ == config_class
    model = AutoModel.from_pretrained(str(models / family)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(models / family))
    assert_encodes_known_words(model, tokenizer)


def assert_encodes_known_words(model, tokenizer) -> None:
    """`SENTENCE` has no unknown wordpiece and gives finite hidden states of size 16."""
    encoded = tokenizer(SENTENCE, return_tensors="pt")
    assert tokenizer.unk_token_id not in encoded["input_ids"][0].tolist()
    with torch.no_grad():
        hidden = model(**encoded).last_hidden_state
    assert hidden.shape == (1, encoded["input_ids"].shape[1], 16)
    assert torch.isfinite(hidden).all()


@pytest.mark.parametrize("name", ["bert-cased", "bert-uncased"])
def test_bert_loads_with_auto_classes(models: Path, name: str) -> None:
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(str(models / name))
    tokenizer = AutoTokenizer.from_pretrained(str(models / name))
    assert model.config.num_hidden_layers == 4
    assert len(model.encoder.layer) == 4
    assert_encodes_known_words(model, tokenizer)


def test_cased_keeps_case_and_uncased_lowercases(models: Path) -> None:
    from allennlp.data.tokenizers import PretrainedTransformerTokenizer

    cased = PretrainedTransformerTokenizer(model_name=str(models / "bert-cased"))
    uncased = PretrainedTransformerTokenizer(model_name=str(models / "bert-uncased"))
    cased_tokens = [t.text for t in cased.tokenize(SENTENCE)]
    uncased_tokens = [t.text for t in uncased.tokenize(SENTENCE)]
    assert cased_tokens[:3] == ["[CLS]", "Peter", "Blackburn"]
    assert uncased_tokens[:3] == ["[CLS]", "peter", "blackburn"]
    assert "[UNK]" not in cased_tokens + uncased_tokens
    assert not cased.tokenizer.do_lower_case
    assert uncased.tokenizer.do_lower_case
    # A word outside the list still tokenizes into known character pieces.
    assert "[UNK]" not in [t.text for t in cased.tokenize("playing Ablaze")]


def test_bert_works_with_allennlp_mismatched_embedder(models: Path) -> None:
    from allennlp.data import Batch, Instance, Token, Vocabulary
    from allennlp.data.fields import TextField
    from allennlp.data.token_indexers import PretrainedTransformerMismatchedIndexer
    from allennlp.modules.token_embedders import PretrainedTransformerMismatchedEmbedder

    name = str(models / "bert-cased")
    indexer = PretrainedTransformerMismatchedIndexer(model_name=name)
    words = [Token(w) for w in SENTENCE.split()]
    batch = Batch([Instance({"tokens": TextField(words, {"bert": indexer})})])
    batch.index_instances(Vocabulary())
    tensors = batch.as_tensor_dict()["tokens"]["bert"]
    embedder = PretrainedTransformerMismatchedEmbedder(model_name=name)
    assert embedder(**tensors).shape == (1, len(words), 16)


def test_elmo_loads_and_embeds(models: Path) -> None:
    from allennlp.modules.elmo import Elmo, _ElmoBiLm, batch_to_ids

    options, weights = str(models / "elmo" / "options.json"), str(models / "elmo" / "weights.hdf5")
    character_ids = batch_to_ids([SENTENCE.split(), ["a", "man"]])
    elmo = Elmo(options, weights, num_output_representations=1, dropout=0.0)
    output = elmo(character_ids)
    representation = output["elmo_representations"][0]
    assert representation.shape == (2, len(SENTENCE.split()), 16)
    assert torch.isfinite(representation).all()
    assert output["mask"].tolist()[1][:3] == [True, True, False]

    bilm = _ElmoBiLm(options, weights)
    activations = bilm(character_ids)["activations"]
    assert len(activations) == 3  # char-CNN + 2 LSTM layers
    assert all(a.shape == (2, len(SENTENCE.split()) + 2, 16) for a in activations)


COMMITTED = Path(__file__).resolve().parents[1] / "fixtures" / "models"


@pytest.mark.parametrize("name", ["bert-cased", "bert-uncased", *fixture_models.FAMILIES])
def test_committed_fixtures_hold_both_formats_with_the_same_tensors(name: str) -> None:
    # transformers >= 4.35 reads model.safetensors, transformers 4.20 (stock AllenNLP 2.10.1)
    # only pytorch_model.bin: both must be there and equal, or the two stacks test different
    # models.
    bin_weights = torch.load(str(COMMITTED / name / "pytorch_model.bin"), map_location="cpu")
    try:
        from safetensors.torch import load_file
    except ImportError:  # the stock stack has no safetensors; the locked lane compares
        pytest.skip("safetensors is not installed (transformers < 4.21 reads only the .bin)")
    safe_weights = load_file(str(COMMITTED / name / "model.safetensors"))
    assert sorted(bin_weights) == sorted(safe_weights)
    for key, tensor in safe_weights.items():
        assert torch.equal(bin_weights[key], tensor), key


def test_committed_tokenizers_use_the_metaspace_form_every_tokenizers_reads() -> None:
    import json

    for path in sorted(COMMITTED.glob("*/tokenizer.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for key in ("pre_tokenizer", "decoder"):
            step = data.get(key) or {}
            if step.get("type") == "Metaspace":
                assert "prepend_scheme" not in step and step["add_prefix_space"], path
