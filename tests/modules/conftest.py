"""Fixtures for the token embedder tests: the tiny model fixtures and batches built from text."""

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Callable, Dict, List, Optional

import pytest
import torch
from allennlp.data import Batch, Instance, Vocabulary
from allennlp.data.fields import TextField
from allennlp.data.token_indexers import (
    ELMoTokenCharactersIndexer,
    PretrainedTransformerIndexer,
    PretrainedTransformerMismatchedIndexer,
)
from allennlp.data.tokenizers import PretrainedTransformerTokenizer, WhitespaceTokenizer

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURE_MODELS = REPO_ROOT / "fixtures" / "models"
CONFIGS = REPO_ROOT / "tests" / "fixtures_configs" / "embedders"

TEXTS = [
    "the movie was good",
    "the story is not fun and the film is very long and the actors were bad",
    "i hate it",
    "a great film with a good story",
]

Tensors = Dict[str, torch.Tensor]


def fixture_script() -> ModuleType:
    """`scripts/fixture_models.py`, loaded once."""
    module = sys.modules.get("fixture_models")
    if module is None:
        path = REPO_ROOT / "scripts" / "fixture_models.py"
        spec = importlib.util.spec_from_file_location("fixture_models", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["fixture_models"] = module
        spec.loader.exec_module(module)
    return module


def _fixture_words() -> List[str]:
    lines = (CONFIGS / "text_classification.jsonl").read_text().splitlines()
    return sorted({word for text in TEXTS + lines for word in text.split()})


def _generated_models(out: Path) -> Path:
    """The same fixtures, made by `scripts/fixture_models.py` when `fixtures/models` is absent."""
    fixture_script().make_model_fixtures(out, _fixture_words())
    return out


def _generated_versioned_families(out: Path) -> Path:
    """
    The fixture script's `VERSIONED` families (ModernBERT) that the installed transformers has,
    written under `out`: `fixtures/models` is written on the locked stack, which has none.
    """
    script = fixture_script()
    for family, write in script.versioned_families().items():
        (out / family).mkdir(parents=True, exist_ok=True)
        write(out / family, _fixture_words())
    return out


@pytest.fixture(autouse=True)
def private_default_cache(monkeypatch, tmp_path_factory) -> Path:
    """A feature cache without `directory` must not write to the user's ~/.cache in tests."""
    home = tmp_path_factory.mktemp("xdg_cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    monkeypatch.delenv("TUNE_FEATURE_CACHE_DIR", raising=False)
    return home / "allennlp_tune" / "features"


@pytest.fixture(scope="session")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`fixtures/models` of the repository (generated into a temporary folder if missing)."""
    wanted = ["bert-cased/config.json", "bert-uncased/config.json", "elmo/weights.hdf5"]
    if all((FIXTURE_MODELS / name).is_file() for name in wanted):
        return FIXTURE_MODELS
    return _generated_models(tmp_path_factory.mktemp("models"))


@pytest.fixture(scope="session")
def texts() -> List[str]:
    """The default texts of the batch fixtures; the second is the longest."""
    return list(TEXTS)


@pytest.fixture(scope="session")
def bert_path(models_dir: Path) -> str:
    return str(models_dir / "bert-cased")


@pytest.fixture(scope="session")
def other_bert_path(models_dir: Path) -> str:
    return str(models_dir / "bert-uncased")


@pytest.fixture(scope="session")
def elmo_files(models_dir: Path) -> Dict[str, str]:
    return {
        "options_file": str(models_dir / "elmo" / "options.json"),
        "weight_file": str(models_dir / "elmo" / "weights.hdf5"),
    }


def _tensors(texts: List[str], tokenize, indexer) -> Tensors:
    instances = [Instance({"text": TextField(tokenize(text), {"t": indexer})}) for text in texts]
    batch = Batch(instances)
    batch.index_instances(Vocabulary())
    return batch.as_tensor_dict()["text"]["t"]


@pytest.fixture(scope="session")
def wordpiece_batch(bert_path: str) -> Callable[..., Tensors]:
    """`pretrained_transformer` indexer output for `texts` (default `TEXTS`)."""

    def make(
        texts: Optional[List[str]] = None, max_length: Optional[int] = None, model: str = None
    ) -> Tensors:
        model = model or bert_path
        tokenizer = PretrainedTransformerTokenizer(model)
        indexer = PretrainedTransformerIndexer(model, max_length=max_length)
        return _tensors(texts or TEXTS, tokenizer.tokenize, indexer)

    return make


@pytest.fixture(scope="session")
def word_batch(bert_path: str) -> Callable[..., Tensors]:
    """`pretrained_transformer_mismatched` indexer output for whitespace-split `texts`."""

    def make(texts: Optional[List[str]] = None, max_length: Optional[int] = None) -> Tensors:
        indexer = PretrainedTransformerMismatchedIndexer(bert_path, max_length=max_length)
        return _tensors(texts or TEXTS, WhitespaceTokenizer().tokenize, indexer)

    return make


@pytest.fixture(scope="session")
def elmo_batch() -> Callable[..., Tensors]:
    """`elmo_characters` indexer output for whitespace-split `texts`."""

    def make(texts: Optional[List[str]] = None) -> Tensors:
        indexer = ELMoTokenCharactersIndexer()
        return _tensors(texts or TEXTS, WhitespaceTokenizer().tokenize, indexer)

    return make
