"""
Counting a config's data as its encoder will see it, without indexing or embedding anything.

`count_wordpieces` reads a split lazily with the config's own `dataset_reader` (so
`max_instances`, pair encoding and the task's filters are honoured) and counts instances, the
sequences the encoder sees (text fields with a transformer or ELMo indexer: one feature-cache
entry each), their wordpieces, and the most wordpieces one instance puts through the encoder
(its sequences' sum: the planner's memory term, the longest batch's activations), and the
longest transformer sequence and where it is (`line N` of a task reader's file, else `instance
N`), which the planner holds against the encoder's positions:

- a `pretrained_transformer` field's tokens are its wordpieces (special tokens included);
- a `pretrained_transformer_mismatched` field (the tagger) is split into wordpieces by its
  indexer's own tokenizer (`intra_word_tokenize`, specials included);
- an ELMo field counts words.

The reader tokenizes every text and every file is read whole, so the counts are exact, not
sampled; on a large split that takes minutes (bench/README.md), which is why `cached_count`
keeps each file's count for the life of the process.
"""

import json
import logging
import os
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

from allennlp_tune.host_access import intra_word_wordpieces, text_field_indexers
from allennlp_tune.quiet import QUIET_READER_LOGGERS, quiet_loggers

TOKENIZER_LOGGER = "transformers.tokenization_utils_base"


@dataclass
class DataCount:
    """
    One split as the encoder sees it: its instances, the encoder's sequences in them (one
    feature-cache entry each), their wordpieces (ELMo: words), the most wordpieces of one
    instance (`longest`), and the seconds the count took.
    """

    instances: int = 0
    sequences: int = 0
    wordpieces: int = 0
    seconds: float = 0.0
    longest: int = 0
    # The most wordpieces of one transformer sequence, and where it is ("line 7", "instance 3").
    longest_sequence: int = 0
    longest_at: Optional[str] = None


def _field_wordpieces(text_field) -> Optional[Tuple[str, int]]:
    """(kind, count) of a text field the encoder sees, or None for another field."""
    from allennlp.data.token_indexers import (
        ELMoTokenCharactersIndexer,
        PretrainedTransformerIndexer,
        PretrainedTransformerMismatchedIndexer,
    )

    indexers = list(text_field_indexers(text_field).values())
    for indexer in indexers:
        if isinstance(indexer, PretrainedTransformerMismatchedIndexer):
            words = [token.text for token in text_field.tokens]
            return "transformer", len(intra_word_wordpieces(indexer, words))
        if isinstance(indexer, PretrainedTransformerIndexer):
            return "transformer", len(text_field.tokens)
    for indexer in indexers:
        if isinstance(indexer, ELMoTokenCharactersIndexer):
            return "elmo", len(text_field.tokens)
    return None


def count_wordpieces(reader_config: Mapping[str, Any], data_path: str) -> DataCount:
    """
    Instances, encoder sequences and wordpieces of `data_path` as the reader built from
    `reader_config` (a rendered config's `dataset_reader`) yields it (module docstring). The
    reader's own INFO lines are held back: the runs' logs have them.
    """
    from allennlp.common import Params
    from allennlp.data import DatasetReader
    from allennlp.data.fields import ListField, TextField

    # Quiet: not a line per reader parameter, nor the reader's own INFO lines (the label set),
    # before the command has trained anything; the runs' logs have them.
    quiet = quiet_loggers(*QUIET_READER_LOGGERS)
    with quiet:
        reader = DatasetReader.from_params(Params(json.loads(json.dumps(reader_config))))
    count = DataCount()
    started = time.monotonic()

    def visit(value) -> int:
        """The wordpieces of the encoder's sequences in `value`, counted into `count`."""
        if isinstance(value, TextField):
            found = _field_wordpieces(value)
            if found is not None:
                count.sequences += 1
                count.wordpieces += found[1]
                if found[0] == "transformer" and found[1] > count.longest_sequence:
                    count.longest_sequence = found[1]
                    line = getattr(reader, "last_line", None)
                    count.longest_at = f"line {line}" if line else f"instance {count.instances}"
                return found[1]
        elif isinstance(value, ListField):
            return sum(visit(inner) for inner in value.field_list)
        return 0

    # transformers warns once about a sequence longer than the tokenizer's maximum ("Token
    # indices sequence length is longer ... will result in indexing errors"), naming neither
    # file nor line: the planner names that row itself (`longest_at`), against the encoder's
    # positions, so the count keeps the warning back.
    too_long = quiet_loggers(TOKENIZER_LOGGER, level=logging.ERROR)
    with quiet, too_long:
        for instance in reader.read(data_path):
            reader.apply_token_indexers(instance)
            count.instances += 1  # before `visit`, which names the instance by its number
            wordpieces = sum(visit(value) for value in instance.fields.values())
            count.longest = max(count.longest, wordpieces)
    count.seconds = time.monotonic() - started
    return count


# Wordpiece counts per (reader config, data path, file size and time): a planner run (or a fit)
# reads each file once however many cells or runs read it.
_COUNTS: Dict[str, DataCount] = {}


def cached_count(reader_config: Mapping[str, Any], data_path: str) -> DataCount:
    """
    `count_wordpieces` of `data_path`, counted once per reader config and file version (its
    size and modification time), so a changed file is counted again.
    """
    try:
        stat = os.stat(data_path)
        stamp = (stat.st_size, stat.st_mtime_ns)
    except OSError:
        stamp = None
    key = json.dumps([reader_config, os.path.abspath(data_path), stamp], sort_keys=True)
    if key not in _COUNTS:
        _COUNTS[key] = count_wordpieces(reader_config, data_path)
    return _COUNTS[key]


def validation_count(
    rendered: Mapping[str, Any], reader_config: Mapping[str, Any], notes: List[str]
) -> Optional[DataCount]:
    """
    The count of the config's validation data (read with `validation_dataset_reader` when the
    config has one), or None with a note in `notes` when there is none or it cannot be read: the
    trainer validates through the same embedder, so a feature cache stores these entries too.
    """
    path = rendered.get("validation_data_path")
    if not isinstance(path, str):
        return None
    reader = rendered.get("validation_dataset_reader") or reader_config
    if "://" not in path and not os.path.exists(path):
        notes.append(f"validation data {path} does not exist: the cache estimate leaves it out")
        return None
    try:
        return cached_count(reader, path)
    except Exception as error:
        notes.append(f"validation data not readable: {type(error).__name__}: {error}"[:300])
        return None


__all__ = ["DataCount", "cached_count", "count_wordpieces", "validation_count"]
