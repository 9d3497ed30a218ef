"""
Per-layer sentence vectors from a transformer encoder, for probing and mutual information.

The encoder is either a pretrained Hugging Face model (name or folder) or the transformer inside
a fine-tuned AllenNLP archive, found by walking the loaded model's modules for a
`transformers.PreTrainedModel`, so any embedder that holds one works (AllenNLP's
`pretrained_transformer` keeps it at `.transformer_model`). Text comes from one of our dataset
readers, by name and parameters, with the encoder's own wordpiece tokenizer; pair tasks are
encoded jointly (`[CLS] a [SEP] b [SEP]`), as BERT is in the paper.

Extraction streams: instances are read lazily, run through the encoder in batches (sorted by
length inside a window of `batch_size * 16` instances, to waste little on padding) with
`output_hidden_states=True` and no gradients, and only the pooled vector of every requested
layer is kept. Layer 0 is the embedding layer and layer `n` the output of the `n`-th block.
"""

import itertools
import json
import logging
import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Union

import numpy as np
import torch
import transformers
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.common.tqdm import Tqdm
from allennlp.data import DatasetReader, Instance
from allennlp.data.fields import LabelField, TensorField, TextField

logger = logging.getLogger(__name__)

POOLINGS = ("mean", "max", "first")
_SORTING_WINDOW_BATCHES = 16


@dataclass
class Encoder:
    """A transformer to take hidden states from, and the tokenizer its inputs need."""

    model: transformers.PreTrainedModel
    tokenizer_name: str
    description: str
    kind: str  # "pretrained" or "fine_tuned"

    @property
    def num_layers(self) -> int:
        """Hidden-state layers, embeddings included (`num_hidden_layers + 1`)."""
        return int(self.model.config.num_hidden_layers) + 1


@dataclass
class LayerFeatures:
    """Pooled vectors of the selected layers for one data file, and the gold labels."""

    layers: List[int]
    vectors: Dict[int, np.ndarray]  # layer -> (N, hidden) float32
    labels: List[Union[str, float]]
    regression: bool
    metadata: Dict[str, Any] = field(default_factory=dict)
    # One hashable key per instance, its wordpiece ids: the "sentence type" of control tasks.
    types: List[tuple] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.labels)


def find_transformer(module: torch.nn.Module) -> transformers.PreTrainedModel:
    """
    The outermost `transformers.PreTrainedModel` inside `module` (itself included). Raises
    `ConfigurationError` if there is none; warns if there are several unrelated ones.
    """
    found: List[transformers.PreTrainedModel] = []
    for candidate in module.modules():
        if isinstance(candidate, transformers.PreTrainedModel):
            if not any(candidate is inner for outer in found for inner in outer.modules()):
                found.append(candidate)
    if not found:
        raise ConfigurationError(
            f"No Hugging Face transformer (transformers.PreTrainedModel) found inside the "
            f"{type(module).__name__} model. Probing needs a model whose text field embedder "
            "holds a transformer, e.g. a `pretrained_transformer` token embedder."
        )
    if len(found) > 1:
        names = ", ".join(type(model).__name__ for model in found)
        logger.warning("The model holds %d transformers (%s); using the first.", len(found), names)
    return found[0]


def load_pretrained_encoder(model_name: str, cuda_device: int = -1) -> Encoder:
    """A pretrained Hugging Face encoder by name or folder (no task head)."""
    try:
        model = transformers.AutoModel.from_pretrained(model_name)
    except (OSError, ValueError) as error:
        raise ConfigurationError(
            f"Could not load the pretrained encoder {model_name!r}: {error}. Give a Hugging Face "
            "model name or a folder saved with `save_pretrained` (config.json and weights)."
        ) from None
    return Encoder(_prepare(model, cuda_device), model_name, model_name, "pretrained")


def load_archived_encoder(archive_file: str, cuda_device: int = -1) -> Encoder:
    """
    The transformer of a fine-tuned AllenNLP archive (`model.tar.gz`). Its tokenizer is the
    archive's dataset reader's `pretrained_transformer` tokenizer, or else the folder or name
    the transformer was loaded from; the first of these that is an existing folder wins.
    """
    from allennlp.models.archival import load_archive

    if not os.path.exists(archive_file):
        raise ConfigurationError(
            f"--archive {archive_file} does not exist. Give the model.tar.gz written by "
            "`allennlp train` (in its serialization directory)."
        )
    # Through `allennlp_tune.compat` (imported with the package): every member is checked before
    # anything is extracted, and the weights load with `weights_only=True`.
    archive = load_archive(archive_file, cuda_device=cuda_device)
    transformer = find_transformer(archive.model)
    candidates = []
    reader_config = archive.config.get("dataset_reader", Params({})).as_dict(quiet=True)
    tokenizer_config = reader_config.get("tokenizer") or {}
    if tokenizer_config.get("type") == "pretrained_transformer":
        candidates.append(tokenizer_config.get("model_name"))
    candidates.append(transformer.name_or_path)
    candidates = [name for name in candidates if name]
    if not candidates:
        raise ConfigurationError(
            f"Cannot tell which tokenizer the transformer in {archive_file} needs. Name it in "
            '--reader, e.g. \'{"type": "sst2", "tokenizer": {"type": '
            '"pretrained_transformer", "model_name": "bert-base-uncased"}}\'.'
        )
    # Relative folders in the training config only resolve from where training ran.
    tokenizer_name = next((name for name in candidates if os.path.isdir(name)), candidates[0])
    return Encoder(_prepare(transformer, cuda_device), tokenizer_name, archive_file, "fine_tuned")


def _prepare(model: transformers.PreTrainedModel, cuda_device: int) -> transformers.PreTrainedModel:
    model.eval()
    if cuda_device >= 0:
        model.to(torch.device("cuda", cuda_device))
    return model


def build_reader(reader: Union[str, Dict[str, Any]], tokenizer_name: str) -> DatasetReader:
    """
    One of our dataset readers from its registered name or its config (a dict or a JSON string),
    with the encoder's wordpiece tokenizer unless the config names a tokenizer itself.
    """
    if isinstance(reader, str):
        text = reader.strip()
        if text.startswith("{"):
            try:
                config = json.loads(text)
            except json.JSONDecodeError as error:
                raise ConfigurationError(
                    f"--reader is not valid JSON ({error}): {reader!r}. Give a reader name such "
                    'as sst2, or a JSON object such as \'{"type": "mrpc"}\'.'
                ) from None
        else:
            config = {"type": text}
    else:
        config = dict(reader)
    if "type" not in config:
        raise ConfigurationError(f'The reader config {config} has no "type" (e.g. "sst2").')
    if config["type"] not in DatasetReader.list_available():
        raise ConfigurationError(
            f"Unknown dataset reader {config['type']!r}. Registered readers include: "
            f"{', '.join(sorted(DatasetReader.list_available()))}."
        )
    config.setdefault("tokenizer", {"type": "pretrained_transformer", "model_name": tokenizer_name})
    if config.get("pair_encoding", "joint") != "joint":
        raise ConfigurationError(
            f"The reader's pair_encoding is {config['pair_encoding']!r}; layer features need "
            "one `tokens` field per instance, so use pair_encoding 'joint'."
        )
    return DatasetReader.from_params(Params(config))


def parse_layers(spec: str, num_layers: int) -> List[int]:
    """
    `"all"`, or comma-separated layer indices and ranges (`"0,6,12"`, `"8-12"`, `"-1"` for the
    top layer), against `num_layers` hidden-state layers (embeddings are layer 0).
    """
    if spec.strip().lower() == "all":
        return list(range(num_layers))

    def absolute(index: str) -> int:
        value = int(index)
        return value + num_layers if value < 0 else value

    layers: List[int] = []
    for part in spec.split(","):
        part = part.strip()
        single = re.fullmatch(r"-?\d+", part)
        span = re.fullmatch(r"(-?\d+)\s*-\s*(-?\d+)", part)
        if single:
            chosen = [absolute(part)]
        elif span:
            chosen = list(range(absolute(span.group(1)), absolute(span.group(2)) + 1))
        else:
            raise ConfigurationError(
                f"--layers {spec!r}: {part!r} is not a layer index or range. Use 'all', or "
                "indices and ranges such as '0,6,12' or '8-12' (-1 is the top layer)."
            )
        if not chosen:
            raise ConfigurationError(f"--layers {spec!r}: the range {part!r} is empty.")
        for layer in chosen:
            if not 0 <= layer < num_layers:
                raise ConfigurationError(
                    f"--layers {spec!r}: layer {layer} does not exist; this encoder has layers "
                    f"0 (embeddings) to {num_layers - 1}."
                )
            if layer not in layers:
                layers.append(layer)
    return sorted(layers)


def extract_layer_features(
    encoder: Encoder,
    reader: DatasetReader,
    file_path: str,
    *,
    layers: Sequence[int],
    pooling: str = "mean",
    batch_size: int = 32,
    max_instances: Optional[int] = None,
) -> LayerFeatures:
    """
    Reads `file_path` with `reader` and returns the pooled vector of every layer in `layers` for
    each instance (in file order), plus the labels. `pooling` is `mean` or `max` over the
    wordpieces (special tokens included, padding excluded) or `first` (`[CLS]`).
    """
    if pooling not in POOLINGS:
        raise ConfigurationError(f"--pooling {pooling!r}: expected one of {', '.join(POOLINGS)}.")
    if not os.path.isfile(file_path):
        raise ConfigurationError(f"Data file {file_path} does not exist.")
    instances: Iterable[Instance] = reader.read(file_path)
    if max_instances is not None:
        instances = itertools.islice(instances, max_instances)
    pooled: Dict[int, List[np.ndarray]] = {layer: [] for layer in layers}
    labels: List[Union[str, float]] = []
    types: List[tuple] = []
    regression: Optional[bool] = None
    description = f"{encoder.kind} features: {os.path.basename(file_path)}"
    progress = Tqdm.tqdm(instances, desc=description, unit=" instances")
    for window in _windows(progress, batch_size * _SORTING_WINDOW_BATCHES):
        token_ids = [_token_ids(instance, file_path) for instance in window]
        types.extend(tuple(ids) for ids, _ in token_ids)
        for instance in window:
            label, is_regression = _label(instance, file_path)
            if regression is not None and is_regression != regression:
                raise ConfigurationError(f"{file_path}: instances mix class labels and scores.")
            regression = is_regression
            labels.append(label)
        order = sorted(range(len(window)), key=lambda index: len(token_ids[index][0]))
        window_vectors: Dict[int, List[np.ndarray]] = {layer: [] for layer in layers}
        for start in range(0, len(order), batch_size):
            batch = [token_ids[index] for index in order[start : start + batch_size]]
            for layer, vectors in _encode_batch(encoder, batch, layers, pooling).items():
                window_vectors[layer].append(vectors)
        inverse = np.argsort(np.asarray(order))
        for layer in layers:
            pooled[layer].append(np.concatenate(window_vectors[layer])[inverse])
    if not labels:
        raise ConfigurationError(f"{file_path} gave no instances to extract features from.")
    vectors = {layer: np.concatenate(pooled[layer]) for layer in layers}
    return LayerFeatures(list(layers), vectors, labels, bool(regression), types=types)


def _windows(items: Iterable[Instance], size: int) -> Iterator[List[Instance]]:
    iterator = iter(items)
    while True:
        window = list(itertools.islice(iterator, size))
        if not window:
            return
        yield window


def _token_ids(instance: Instance, file_path: str):
    text_field = instance.fields.get("tokens")
    if not isinstance(text_field, TextField):
        raise ConfigurationError(
            f"{file_path}: instances have no `tokens` text field (fields: "
            f"{', '.join(instance.fields)}). Use a single-sentence reader or a pair reader with "
            "pair_encoding 'joint'."
        )
    tokens = text_field.tokens
    if any(token.text_id is None for token in tokens):
        raise ConfigurationError(
            f"{file_path}: tokens carry no wordpiece ids; the reader's tokenizer must be "
            "a `pretrained_transformer` tokenizer matching the encoder."
        )
    return [token.text_id for token in tokens], [token.type_id or 0 for token in tokens]


def _label(instance: Instance, file_path: str):
    label_field = instance.fields.get("label")
    if isinstance(label_field, LabelField):
        return str(label_field.label), False
    if isinstance(label_field, TensorField):
        return float(label_field.tensor.item()), True
    raise ConfigurationError(
        f"{file_path}: instances have no gold `label` (a test file without labels?). Probing "
        "and mutual information need labelled train and dev files."
    )


def _encode_batch(
    encoder: Encoder, batch: List[tuple], layers: Sequence[int], pooling: str
) -> Dict[int, np.ndarray]:
    config = encoder.model.config
    max_length = int(getattr(config, "max_position_embeddings", 512) or 512)
    lengths = [min(len(ids), max_length) for ids, _ in batch]
    if any(len(ids) > max_length for ids, _ in batch):
        logger.warning("Truncating inputs longer than %d wordpieces.", max_length)
    width = max(lengths)
    pad_id = int(getattr(config, "pad_token_id", 0) or 0)
    input_ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    type_ids = torch.zeros((len(batch), width), dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.bool)
    for row, ((ids, types), length) in enumerate(zip(batch, lengths)):
        input_ids[row, :length] = torch.tensor(ids[:length])
        type_ids[row, :length] = torch.tensor(types[:length])
        mask[row, :length] = True
    device = next(encoder.model.parameters()).device
    inputs = {"input_ids": input_ids, "attention_mask": mask.long()}
    if getattr(config, "type_vocab_size", 0):
        inputs["token_type_ids"] = type_ids
    with torch.inference_mode():
        outputs = encoder.model(
            **{key: value.to(device) for key, value in inputs.items()},
            output_hidden_states=True,
            return_dict=True,
        )
        mask = mask.to(device)
        return {
            layer: _pool(outputs.hidden_states[layer], mask, pooling).float().cpu().numpy()
            for layer in layers
        }


def _pool(hidden: torch.Tensor, mask: torch.Tensor, pooling: str) -> torch.Tensor:
    if pooling == "first":
        return hidden[:, 0]
    expanded = mask.unsqueeze(-1)
    if pooling == "max":
        return hidden.masked_fill(~expanded, torch.finfo(hidden.dtype).min).max(dim=1).values
    return (hidden * expanded).sum(dim=1) / expanded.sum(dim=1).clamp(min=1)
