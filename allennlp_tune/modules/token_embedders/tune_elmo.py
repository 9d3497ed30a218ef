import json
import logging
from typing import Any, Dict, List, Optional, Union

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.common.file_utils import cached_path
from allennlp.modules.elmo import _ElmoBiLm
from allennlp.modules.token_embedders import TokenEmbedder
from allennlp.nn.util import get_mask_from_sequence_lengths, remove_sentence_boundaries

from allennlp_tune.modes import LORA
from allennlp_tune.modules.feature_cache import FeatureCache
from allennlp_tune.modules.token_embedders.freezable import (
    FreezableEncoderMixin,
    build_scalar_mix,
    check_mode,
    parse_layers,
)

logger = logging.getLogger(__name__)


def _fetch(path_or_url: str, parameter: str) -> str:
    """
    `cached_path(path_or_url)`, with an error naming the file and how to point the configs at
    local copies when it cannot be had (offline, a wrong URL, a missing file) instead of the
    bare `requests.ConnectionError` or `FileNotFoundError` of `cached_path`.
    """
    try:
        return cached_path(path_or_url)
    except OSError as error:  # requests' errors are OSErrors too
        variable = "TUNE_ELMO_OPTIONS" if parameter == "options_file" else "TUNE_ELMO_WEIGHTS"
        raise ConfigurationError(
            f"tune_elmo could not read its {parameter} {path_or_url} "
            f"({type(error).__name__}: {error}). If this machine has no network, download the "
            "ELMo options and weight files where there is one and set TUNE_ELMO_OPTIONS and "
            f"TUNE_ELMO_WEIGHTS to their local paths (here {variable}; the training configs "
            f"read both), or set tune_elmo's {parameter} in your own config."
        ) from error


@TokenEmbedder.register("tune_elmo")
class TuneElmoEmbedder(FreezableEncoderMixin, TokenEmbedder):
    """
    A pretrained ELMo biLM that is either frozen with a learned scalar mix of its three layers
    (char-CNN, biLSTM layer 1, biLSTM layer 2: feature extraction, as in the ELMo paper),
    trained (fine-tuning), or trained only in its biases (BitFit). Use it with the
    `elmo_characters` indexer.

    The biLM is AllenNLP's (`allennlp.modules.elmo._ElmoBiLm`, the module inside `Elmo`); the
    mix is computed with the sentence boundaries, which are then removed, exactly as `Elmo`
    does. The parameter groups for gradual unfreezing are, bottom to top: `char_cnn` (character
    embedding, convolutions, highway layers and projection), `lstm_0` and `lstm_1` (the forward
    and backward LSTM of that layer together).

    **Statefulness.** AllenNLP's ELMo biLSTM is stateful: each batch starts from the final
    states of the previous batch (row by row), so the same sentence gets different vectors
    depending on what was embedded before it and where it sits in its batch. By default
    (`stateful: false`) this embedder starts every batch from zero states instead, so an
    output depends only on its own sentence: a frozen encoder is deterministic, a cached entry
    equals a fresh computation, and validation does not depend on the order of batches.
    `stateful: true` restores AllenNLP's behaviour; it cannot be combined with `feature_cache`.

    Registered as a `TokenEmbedder` with name "tune_elmo".

    ```jsonnet
    "token_indexers": {"elmo": {"type": "elmo_characters"}},
    ...
    "token_embedders": {"elmo": {
        "type": "tune_elmo",
        "options_file": "/models/elmo/options.json",
        "weight_file": "/models/elmo/weights.hdf5",
        "mode": "feature_extraction",
        "layers": "all",
        "dropout": 0.5,
        "feature_cache": {},
    }}
    ```

    With `"mode": "bitfit"` only the biLM's biases train (convolutions, highway layers,
    projection, LSTM state projections), and the archive stores only those (the rest is read
    again from `weight_file`). `"lora"` is not available: LoRA adapts transformer linear layers.

    # Parameters

    options_file : `str`
        ELMo JSON options file (path or URL).
    weight_file : `str`
        ELMo hdf5 weight file (path or URL). Archives keep both paths in their config and read
        the files again when they are loaded.
    mode : `str`, optional (default = `"feature_extraction"`)
        The initial state: `"feature_extraction"` (biLM frozen, eval mode, `no_grad`; only the
        scalar mix trains), `"fine_tuning"` (every biLM weight trains) or `"bitfit"` (only the
        parameters whose name ends in `bias` train; otherwise as fine-tuning, see
        `tune_transformer`). `"lora"` is an error.
    tuned_groups : `str`, optional (default = `"all"`)
        The layer groups that train (`"char_cnn"`, `"lstm_0"`, `"lstm_1"`, bottom to top):
        `"all"`, `"top:K"`, `"bottom:K"`, a range `"I-J"` or names, as in `tune_transformer`.
    layers : `Union[str, List[int]]`, optional (default = `"all"`)
        `"all"` (0 = char-CNN, 1 and 2 = biLSTM layers), `"top"`, or a list of indices.
    scalar_mix : `Dict[str, Any]`, optional (default = `None`)
        `ScalarMix` options: `do_layer_norm`, `initial_scalar_parameters`, `trainable`.
    dropout : `float`, optional (default = `0.5`)
        Dropout on the mixed output (AllenNLP's `Elmo` default).
    stateful : `bool`, optional (default = `False`)
        Carry the biLSTM states across batches as AllenNLP's `Elmo` does (see above).
    feature_cache : `Dict[str, Any]`, optional (default = `None`)
        As in `tune_transformer`: `{}` or `{"directory": ..., "memory_mb": ..., "disk_mb": ...,
        "min_free_mb": ...}`; only with `mode: "feature_extraction"` and `stateful: false`.
    serialization_dir : `str`, optional (default = `None`)
        Not for configs: `allennlp train` passes it, and it locates the default cache folder.
    """

    def __init__(
        self,
        options_file: str,
        weight_file: str,
        *,
        mode: str = "feature_extraction",
        tuned_groups: str = "all",
        layers: Union[str, List[int]] = "all",
        scalar_mix: Optional[Dict[str, Any]] = None,
        dropout: float = 0.5,
        stateful: bool = False,
        feature_cache: Optional[Dict[str, Any]] = None,
        serialization_dir: Optional[str] = None,
    ) -> None:
        super().__init__()
        owner = "tune_elmo"
        check_mode(mode, feature_cache, owner)
        if mode == LORA:
            raise ConfigurationError(
                'tune_elmo.mode is "lora": LoRA adapts transformer linear layers; use bitfit or '
                "fine_tuning for ELMo."
            )
        if stateful and feature_cache is not None:
            raise ConfigurationError(
                "tune_elmo.stateful is true and tune_elmo.feature_cache is set: with carried "
                "states a sentence's features depend on the batches before it, so they cannot "
                "be cached. Remove feature_cache or set stateful: false."
            )
        options_path = _fetch(options_file, "options_file")
        with open(options_path) as options:
            self._options = json.load(options)
        # The char-CNN layer, then one per biLSTM layer (checked before loading any weight).
        num_layers = self._options["lstm"]["n_layers"] + 1
        self._layers = parse_layers(layers, num_layers, owner)
        self._scalar_mix = build_scalar_mix(scalar_mix, len(self._layers), owner)
        self._dropout = torch.nn.Dropout(p=dropout)
        self._selection = f"elmo|layers={self._layers}"

        # Local copies, so that a failed download is reported here, naming what to set.
        weight_path = _fetch(weight_file, "weight_file")
        self._elmo_bilm = _ElmoBiLm(options_path, weight_path, requires_grad=False)
        self._stateful = stateful
        self._elmo_bilm._elmo_lstm.stateful = stateful
        self.output_dim = self._elmo_bilm.get_output_dim()

        num_lstm_layers = num_layers - 1
        self._setup_freezable(
            encoder_name="_elmo_bilm",
            group_names=["char_cnn"] + [f"lstm_{index}" for index in range(num_lstm_layers)],
            layer_prefixes=[
                [f"_elmo_lstm.forward_layer_{index}", f"_elmo_lstm.backward_layer_{index}"]
                for index in range(num_lstm_layers)
            ],
            mode=mode,
            feature_cache=feature_cache,
            serialization_dir=serialization_dir,
            owner=owner,
            tuned_groups=tuned_groups,
            base_weights=f"weight_file {weight_file!r}",
        )

    def get_output_dim(self) -> int:
        return self.output_dim

    def _encoder_identity(self) -> str:
        return f"ElmoBiLm|{json.dumps(self._options, sort_keys=True)}"

    def forward(self, elmo_tokens: torch.Tensor) -> torch.Tensor:  # type: ignore
        """
        # Parameters

        elmo_tokens : `torch.Tensor`
            Character ids from the `elmo_characters` indexer, `(batch_size, num_tokens, 50)`.

        # Returns

        `torch.Tensor`
            `(batch_size, num_tokens, 2 * projection_dim)`.
        """
        if self.uses_feature_cache:
            lengths = ((elmo_tokens > 0).sum(-1) > 0).sum(-1)
            mixed = self._mixed_from_cache(elmo_tokens, lengths.tolist())
            mask_with_boundaries = get_mask_from_sequence_lengths(
                lengths + 2, elmo_tokens.size(1) + 2
            )
        else:
            with self._encoder_context():
                layers, mask_with_boundaries = self._layer_outputs(elmo_tokens)
            mixed = self._mix_layers(layers, mask_with_boundaries)
        mixed, _ = remove_sentence_boundaries(mixed, mask_with_boundaries)
        return self._dropout(mixed)

    def _layer_outputs(self, elmo_tokens: torch.Tensor):
        """The selected layers `(num_selected, batch, num_tokens + 2, dim)` and their mask."""
        if not self._stateful:
            self._elmo_bilm._elmo_lstm.reset_states()
        output = self._elmo_bilm(elmo_tokens)
        activations = output["activations"]
        return torch.stack([activations[index] for index in self._layers]), output["mask"]

    def _mixed_from_cache(self, elmo_tokens: torch.Tensor, lengths: List[int]) -> torch.Tensor:
        characters = elmo_tokens.cpu().numpy()
        prefix = self._cache_key_prefix(self._selection)
        keys = [
            FeatureCache.key(prefix, characters[row, :length]) for row, length in enumerate(lengths)
        ]

        def compute(rows: List[int]) -> torch.Tensor:
            index = torch.tensor(rows, device=elmo_tokens.device)
            width = max(1, max(lengths[row] for row in rows))
            return self._layer_outputs(elmo_tokens[index, :width])[0]

        return self._mixed_through_cache(
            keys,
            [length + 2 for length in lengths],
            width=elmo_tokens.size(1) + 2,
            num_layers=len(self._layers),
            dim=self.output_dim,
            compute=compute,
            device=elmo_tokens.device,
        )
