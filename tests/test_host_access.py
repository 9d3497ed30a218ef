"""
`allennlp_tune.host_access`: each reach into a host private does what its caller relies on, on
this stack (a host upgrade that renames one fails here, by name), and no other module of the
package reads those privates itself.
"""

import ast
import codecs
from pathlib import Path

import optuna
from allennlp.common import Lazy, Params, cached_transformers
from allennlp.data import Token
from allennlp.data.fields import TextField
from allennlp.data.token_indexers import PretrainedTransformerMismatchedIndexer
from allennlp.modules.text_field_embedders import BasicTextFieldEmbedder
from allennlp.modules.token_embedders import Embedding, PretrainedTransformerEmbedder
from allennlp.training.optimizers import Optimizer

from allennlp_tune import host_access
from allennlp_tune.data.paths import FIXTURE_MODELS_DIR

BERT = str(FIXTURE_MODELS_DIR / "bert-uncased")
PACKAGE = Path(host_access.__file__).parent
# Where a host private may be read: here, the trainer's access module, and the fixes.
ALLOWED = {"host_access.py", "training/trainer_access.py", "compat.py"}
PRIVATES = {
    "_token_indexers", "_allennlp_tokenizer", "_model_cache", "_params",
    "_handle_continued_spans", "_token_embedders", "_max_length", "_trial_id",
    "_is_text_encoding",
}  # fmt: skip


def test_no_other_module_reads_the_host_privates():
    found = []
    for path in PACKAGE.rglob("*.py"):
        where = str(path.relative_to(PACKAGE))
        if where in ALLOWED:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            attribute = node.attr if isinstance(node, ast.Attribute) else None
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr":
                constant = node.args[1] if len(node.args) > 1 else None
                attribute = getattr(constant, "value", None)
            own = isinstance(node, ast.Attribute) and getattr(node.value, "id", "") == "self"
            if attribute in PRIVATES and not own:
                found.append(f"{where}:{node.lineno} {attribute}")
    assert not found, found


def test_the_mismatched_indexers_wordpieces_and_a_fields_indexers():
    indexer = PretrainedTransformerMismatchedIndexer(BERT)
    wordpieces = host_access.intra_word_wordpieces(indexer, ["the", "unaffable", "film"])
    assert str(wordpieces[0]) == "[CLS]" and str(wordpieces[-1]) == "[SEP]"
    assert len(wordpieces) > 5  # "unaffable" is more than one wordpiece
    field = TextField([Token("film")])
    assert dict(host_access.text_field_indexers(field)) == {}  # not yet applied
    field.token_indexers = {"tokens": indexer}
    assert list(host_access.text_field_indexers(field)) == ["tokens"]


def test_the_transformer_cache_is_emptied():
    cached_transformers.get(BERT, make_copy=False)
    assert cached_transformers._model_cache
    host_access.forget_cached_transformers()
    assert not cached_transformers._model_cache


def test_a_lazy_optimizers_config_and_an_embedders_parts():
    lazy = Lazy(Optimizer, Params({"type": "adamw", "lr": 0.003}))
    assert host_access.lazy_params(lazy)["lr"] == 0.003
    embedding = Embedding(embedding_dim=2, num_embeddings=3)
    embedder = BasicTextFieldEmbedder({"tokens": embedding})
    assert host_access.token_embedders_of(embedder) == {"tokens": embedding}
    folded = PretrainedTransformerEmbedder(BERT, max_length=16)
    assert host_access.folds_long_inputs(folded)
    assert not host_access.folds_long_inputs(PretrainedTransformerEmbedder(BERT))


def test_continued_spans_are_merged_as_the_metric_merges_them():
    merge = host_access.continued_spans_merger()
    spans = [("ARG1", (0, 1)), ("C-ARG1", (3, 4)), ("V", (2, 2))]
    assert sorted(merge(spans)) == [("ARG1", (0, 4)), ("V", (2, 2))]


def test_a_trials_storage_id_and_text_encodings():
    storage = optuna.storages.InMemoryStorage()
    first = optuna.create_study(storage=storage, study_name="a")
    second = optuna.create_study(storage=storage, study_name="b")
    first.optimize(lambda trial: 0.0, n_trials=2)
    second.optimize(lambda trial: 0.0, n_trials=1)
    trial = second.trials[0]
    assert trial.number == 0 and host_access.storage_trial_id(trial) == 2
    assert host_access.is_text_encoding(codecs.lookup("utf-8"))
    assert not host_access.is_text_encoding(codecs.lookup("base64"))
