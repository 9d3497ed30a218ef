"""
Every reach of allennlp-tune into a private of its host (AllenNLP, Optuna, Python's codecs)
beyond AllenNLP's trainer, one function each with the reason there is no public way; the
trainer's are in `training/trainer_access.py`, the fixes that replace host code in `compat.py`.
When the host changes, these two modules are the ones to read. Imports nothing of ours, so
every room may use it.
"""

import codecs
from typing import Any, Callable, Dict, List, Mapping

# ---- AllenNLP ---------------------------------------------------------------------------------


def text_field_indexers(text_field: Any) -> Mapping[str, Any]:
    """A `TextField`'s token indexers, or none: its public `token_indexers` raises until they
    are set (`apply_token_indexers`), and the planner counts fields either way."""
    return getattr(text_field, "_token_indexers", None) or {}


def intra_word_wordpieces(indexer: Any, words: List[str]) -> List[Any]:
    """The wordpieces a `PretrainedTransformerMismatchedIndexer` makes of `words`, specials
    included: it keeps its tokenizer private (`_allennlp_tokenizer`) and indexes only a whole
    field, while the planner counts wordpieces without indexing anything."""
    wordpieces, _ = indexer._allennlp_tokenizer.intra_word_tokenize(words)
    return wordpieces


def forget_cached_transformers() -> None:
    """Empties AllenNLP's cache of loaded transformers (`cached_transformers._model_cache`),
    which has no public clear: the planner's timed models must not stay in its memory beside
    the runs it starts. The tokenizers' cache stays (small)."""
    from allennlp.common import cached_transformers

    cached_transformers._model_cache.clear()


def lazy_params(lazy: Any) -> Dict[str, Any]:
    """The config a `Lazy[...]` will build from (`Lazy._params`), which `Lazy` shows only to
    `construct`: the discriminative optimizer reads the inner optimizer's `lr` and
    `parameter_groups` before building it, and `models.input_size` reads which size keys a
    layer's config gives."""
    return lazy._params


def continued_spans_merger() -> Callable[[Any], Any]:
    """`SpanBasedF1Measure._handle_continued_spans`, the rule that merges `C-` continued spans:
    the paired bootstrap recounts span F1 per sentence exactly as the metric does, and the
    metric keeps that step private."""
    from allennlp.training.metrics.span_based_f1_measure import SpanBasedF1Measure

    return SpanBasedF1Measure._handle_continued_spans


def token_embedders_of(text_field_embedder: Any) -> Dict[str, Any]:
    """A `BasicTextFieldEmbedder`'s token embedders by name (`_token_embedders`): it exposes
    them only as submodules named `token_embedder_<name>`."""
    return dict(text_field_embedder._token_embedders)


def folds_long_inputs(embedder: Any) -> bool:
    """Whether a `PretrainedTransformerEmbedder` folds inputs longer than its positions
    (`max_length` given): it keeps `_max_length` private and has no public reader of it."""
    return embedder._max_length is not None


# ---- Optuna -----------------------------------------------------------------------------------


def storage_trial_id(trial: Any) -> int:
    """
    The storage's id of a `Trial` or `FrozenTrial`, which both keep private (`_trial_id`): the
    heartbeat of a trial a worker trains (`RDBStorage.record_heartbeat`), and marking a trial a
    killed process left running as failed (`RDBStorage.set_trial_state_values`), take it, and
    `trial.number` is not it once a storage holds several studies.
    """
    return trial._trial_id


# ---- Python -----------------------------------------------------------------------------------


def is_text_encoding(info: codecs.CodecInfo) -> bool:
    """Whether a codec decodes bytes to text (`CodecInfo._is_text_encoding`, False for base64,
    rot13 and the like): `codecs` has no public test, and `open(..., encoding="base64")`
    fails only at the first read."""
    return getattr(info, "_is_text_encoding", True)
