import json
import logging
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import torch
from allennlp.common.checks import ConfigurationError
from allennlp.modules.token_embedders import PretrainedTransformerEmbedder, TokenEmbedder

from allennlp_tune.modes import FEATURE_EXTRACTION
from allennlp_tune.modules.feature_cache.store import row_keys
from allennlp_tune.modules.token_embedders.freezable import (
    FreezableEncoderMixin,
    build_scalar_mix,
    check_mode,
    parse_layers,
)
from allennlp_tune.modules.token_embedders.lora import check_lora_options, inject_lora
from allennlp_tune.modules.token_embedders.pooled_layers import PooledLayersMixin
from allennlp_tune.modules.token_embedders.prefix_cache import (
    capture_layer_output,
    check_prefix_cache,
    replayed_prefix,
)
from allennlp_tune.modules.token_embedders.wordpieces import Wordpieces

logger = logging.getLogger(__name__)

# Last name parts of modules outside the layer list that every layer reads: MPNet's relative
# position bias (`encoder.relative_attention_bias`, one table of per-head attention-score biases
# computed once in the encoder and added in every layer) and DeBERTa's relative position
# embeddings (`encoder.rel_embeddings`, with the layer norm beside them that normalises them,
# `SHARED_NORMS`). They join the bottom group (`embeddings`), not the top one their
# registration order would give them; see `_find_layer_groups`.
SHARED_BY_EVERY_LAYER = ("relative_attention_bias", "rel_embeddings")
# A norm beside a shared table, in the same parent module, that only that table goes through
# (DeBERTa-v2's `encoder.LayerNorm` with `norm_rel_ebd: "layer_norm"`).
SHARED_NORMS = {"rel_embeddings": "LayerNorm"}


@TokenEmbedder.register("tune_transformer")
class TuneTransformerEmbedder(
    PooledLayersMixin, FreezableEncoderMixin, PretrainedTransformerEmbedder
):
    """
    A pretrained `transformers` encoder (BERT and family) that is either frozen with a learned
    scalar mix of its layers (feature extraction), trained (fine-tuning), or trained in part:
    only its biases (BitFit, Ben Zaken et al. 2022) or only low-rank adapters added to its linear
    layers (LoRA, Hu et al. 2022, through `peft`), at the wordpiece level. Use it with the
    `pretrained_transformer` indexer; for word-level outputs use `tune_transformer_mismatched`.

    Unlike AllenNLP's `pretrained_transformer` embedder, `layers: "all"` includes the embedding
    layer (`hidden_states[0]`), so the mix has `num_hidden_layers + 1` weights; a frozen encoder
    stays in eval mode (no dropout) while the model trains and runs under `torch.no_grad()`;
    the parameter groups are exposed for gradual unfreezing and discriminative learning rates
    (`layer_groups()`, `freeze()`, `unfreeze(top_k_groups)`, `trainable_groups()`); and the
    frozen features, or under a tuned top block the frozen layers' output, can be cached on
    disk (`feature_cache`).

    The model's pooler (the dense + tanh head on `[CLS]` used by next-sentence prediction) is
    dropped: no layer output uses it, and in fine-tuning it would get no gradient.

    Registered as a `TokenEmbedder` with name "tune_transformer".

    ```jsonnet
    "token_embedders": {"tokens": {
        "type": "tune_transformer",
        "model_name": "bert-base-cased",
        "mode": "feature_extraction",        // or "fine_tuning"
        "tuned_groups": "all",               // or "top:2": fine-tune only the top 2 layers
        "layers": "all",                     // embeddings + every layer
        "scalar_mix": {"do_layer_norm": false},
        "dropout": 0.1,
        "max_length": 512,                   // same as the indexer's
        "feature_cache": {},                 // or {"directory": "/big/disk/features"}
    }}
    ```

    Parameter-efficient modes: only the biases, or only LoRA matrices, train (with the scalar
    mix and the task model); archives store just those and reload the rest from `model_name`.

    ```jsonnet
    "token_embedders": {"tokens": {
        "type": "tune_transformer",
        "model_name": "bert-base-cased",
        "mode": "lora",
        "lora": {"r": 8, "alpha": 16, "dropout": 0.1, "target_modules": null},  // null: per family
    }}
    // or
    "token_embedders": {"tokens": {
        "type": "tune_transformer",
        "model_name": "bert-base-cased",
        "mode": "bitfit",
    }}
    ```

    # Parameters

    model_name : `str`
        A `transformers` model name or folder, the same as the indexer's. Loaded through
        `allennlp.common.cached_transformers`, so archives reload it the usual way.
    mode : `str`, optional (default = `"feature_extraction"`)
        The initial state. `"feature_extraction"`: the encoder is frozen (no gradients, eval
        mode, `no_grad`) and only the scalar mix trains. `"fine_tuning"`: every encoder weight
        trains. `"bitfit"`: only the encoder's biases train (every parameter whose name ends in
        `bias`, layer norm biases included). `"lora"`: the encoder's weights stay frozen and
        LoRA matrices added to some of its linear layers train (see `lora`). In `bitfit` and
        `lora` every group starts trainable, the encoder follows `train()` / `eval()` as in
        fine-tuning, the model's `state_dict()` (so the archive) holds only the encoder weights
        the mode trains plus a fingerprint of the frozen ones, which are read again from
        `model_name` when the archive loads (a different `model_name` folder is an error), and
        `feature_cache` cannot be used. Training callbacks may change the state later with
        `freeze()` / `unfreeze()`; in `bitfit` / `lora` an unfrozen group trains only its biases
        / LoRA matrices (`mode_parameters()`).
    lora : `Dict[str, Any]`, optional (default = `None`)
        Only with `mode: "lora"` (an error otherwise). The LoRA options: `r` (rank, default
        8), `alpha` (the update is scaled by `alpha / r`, default 16), `dropout` (on the LoRA
        branch's input, default 0.1) and `target_modules` (names of the linear modules to adapt,
        matched as peft does: a module named so or ending in `.<name>`; default `null`: peft's
        default for the model type, the attention's query and value projections for BERT,
        RoBERTa, XLM-R, ELECTRA and DeBERTa-v2 (`query_proj`, `value_proj`), and allennlp-tune's
        for ALBERT (`query`, `value`), DistilBERT (`q_lin`, `v_lin`), MPNet (`q`, `v`) and
        ModernBERT (`Wqkv`, its fused query/key/value projection)). `{}`
        or `null` uses every default. The adapters are added before the layer groups are formed,
        so each LoRA matrix is in its layer's group. See `lora.py`.
    tuned_groups : `str`, optional (default = `"all"`)
        Which layer groups train in `fine_tuning`, `bitfit` and `lora` (see `layer_groups()`;
        0 = the embeddings, then one group per layer): `"all"`, `"top:K"` (the K highest),
        `"bottom:K"` (the K lowest), a range `"I-J"` of group indices, or group names separated
        by commas (`"embeddings,layer_0"`). The other groups stay frozen from the start: no
        gradient (autograd stops at the lowest tuned group), eval mode, and in `bitfit` / `lora`
        their biases / LoRA matrices do not train either. `feature_extraction` takes only
        `"all"`. Training callbacks that `freeze()` / `unfreeze()` change the set later.
    layers : `Union[str, List[int]]`, optional (default = `"all"`)
        Which hidden states are mixed: `"all"` (0 = embeddings through `num_hidden_layers`),
        `"top"` (the last layer only: no mix), or a list of indices (negative ones count from
        the top). The top layer is the model's output (`last_hidden_state`, after ModernBERT's
        `final_norm` on every transformers version).
    scalar_mix : `Dict[str, Any]`, optional (default = `None`)
        Options of the `allennlp.modules.ScalarMix` over the selected layers: `do_layer_norm`
        (default `false`), `initial_scalar_parameters` (one pre-softmax weight per selected
        layer; default all 0) and `trainable` (default `true`). Unused for a single layer.
    dropout : `float`, optional (default = `0.0`)
        Dropout on the mixed output.
    max_length : `int`, optional (default = `None`)
        Fold longer inputs into segments of this many wordpieces, as AllenNLP does; must equal
        the indexer's `max_length`. Applies in both modes and with the cache.
    feature_cache : `Dict[str, Any]`, optional (default = `None`)
        Cache the selected layers of every distinct input on disk (float16) and reuse them in
        later epochs, validation and evaluation, in `mode: "feature_extraction"` (bypassed
        while any group is unfrozen); or, in `mode: "fine_tuning"` with `tuned_groups` that
        leave the embeddings and at least one layer frozen (`"top:2"` of a 6-layer encoder),
        cache the output of the frozen layers below the lowest tuned one, so those layers run
        once per input instead of once per epoch (`prefix_cache.py`; needs `layers: "top"`, no
        `max_length`, and layers that do not share weights). Keys: `directory` (default: the
        environment variable `TUNE_FEATURE_CACHE_DIR`, else `<serialization_dir>/feature_cache`
        under `allennlp train`, else `~/.cache/allennlp_tune/features`), `memory_mb` (in-memory
        LRU budget, default 256), `disk_mb` (most MiB the folder may hold, default no limit)
        and `min_free_mb` (free space to leave on its disk, default max(2 GiB, 5% of the
        disk)): past those, entries are not written and are recomputed, with the same results.
        `{}` enables it with the defaults. Entries are keyed by the encoder's (frozen) weights,
        the layer selection, `max_length` and the input ids, so a cache directory can be shared
        between runs and models safely. See `feature_cache.py`. Heads that pool first read the
        pooled-feature cache from the same folder (`pooled_layers`, `feature_cache/pooled.py`).
    store_frozen_weights : `bool`, optional (default = `True`)
        `false` (feature_extraction only) leaves the frozen encoder's weights out of
        `state_dict()`, checkpoints and the archive, with their fingerprint in their place, as
        `bitfit` and `lora` archives leave out theirs; loading reads them from `model_name` and
        refuses other weights. The light frozen heads' configs set it: each epoch's checkpoint
        is then the head's few numbers, not the encoder's.
    sub_module : `str`, optional (default = `None`)
        Use this submodule of the model (e.g. `"encoder"` of T5).
    override_weights_file : `str`, optional (default = `None`)
    override_weights_strip_prefix : `str`, optional (default = `None`)
    reinit_modules : `Union[int, Tuple[int, ...], Tuple[str, ...]]`, optional (default = `None`)
    load_weights : `bool`, optional (default = `True`)
    gradient_checkpointing : `bool`, optional (default = `None`)
    tokenizer_kwargs : `Dict[str, Any]`, optional (default = `None`)
    transformer_kwargs : `Dict[str, Any]`, optional (default = `None`)
        As in AllenNLP's `pretrained_transformer` embedder.
    serialization_dir : `str`, optional (default = `None`)
        Not for configs: `allennlp train` passes it, and it locates the default cache folder.
    """

    def __init__(
        self,
        model_name: str,
        *,
        mode: str = "feature_extraction",
        lora: Optional[Dict[str, Any]] = None,
        tuned_groups: str = "all",
        layers: Union[str, List[int]] = "all",
        scalar_mix: Optional[Dict[str, Any]] = None,
        dropout: float = 0.0,
        max_length: Optional[int] = None,
        feature_cache: Optional[Dict[str, Any]] = None,
        store_frozen_weights: bool = True,
        sub_module: Optional[str] = None,
        override_weights_file: Optional[str] = None,
        override_weights_strip_prefix: Optional[str] = None,
        reinit_modules: Optional[Union[int, Tuple[int, ...], Tuple[str, ...]]] = None,
        load_weights: bool = True,
        gradient_checkpointing: Optional[bool] = None,
        tokenizer_kwargs: Optional[Dict[str, Any]] = None,
        transformer_kwargs: Optional[Dict[str, Any]] = None,
        serialization_dir: Optional[str] = None,
        _owner: str = "tune_transformer",
    ) -> None:
        owner = _owner
        # Full fine-tuning keeps the error of a cache on a training encoder; a block may have one.
        check_mode(mode, feature_cache, owner, caches_below_block=tuned_groups != "all")
        lora_options = check_lora_options(lora, mode, owner)
        # Loading draws from the global RNG on some stacks (transformers 4.20 initialises the
        # weights before loading them) but not when AllenNLP's model cache holds the encoder, so
        # the head built after it would start from other weights in the second run of a process
        # (in-process search trials, tests). The load runs on a copy of the RNG state: the head's
        # initialisation depends on the seed only, as on the locked stack, where loading draws
        # nothing.
        with torch.random.fork_rng(devices=[]):
            super().__init__(
                model_name,
                max_length=max_length,
                sub_module=sub_module,
                override_weights_file=override_weights_file,
                override_weights_strip_prefix=override_weights_strip_prefix,
                reinit_modules=reinit_modules,
                load_weights=load_weights,
                gradient_checkpointing=gradient_checkpointing,
                tokenizer_kwargs=tokenizer_kwargs,
                transformer_kwargs=transformer_kwargs,
            )
        if isinstance(getattr(self.transformer_model, "pooler", None), torch.nn.Module):
            self.transformer_model.pooler = None

        self._owner = owner
        # The tokenizer's name and options: a joint pair's separator id comes from them
        # (allennlp_tune/models/joint_pair.py).
        self._model_name = model_name
        self._tokenizer_kwargs = tokenizer_kwargs
        self._max_positions = getattr(self.config, "max_position_embeddings", None)
        if max_length is not None and self._max_positions and max_length > self._max_positions:
            raise ConfigurationError(
                f"{owner}.max_length is {max_length}, but {model_name} has only "
                f"{self._max_positions} positions; set max_length (here and on the indexer) to "
                f"at most {self._max_positions}."
            )
        num_layers = self.config.num_hidden_layers + 1
        self._layers = parse_layers(layers, num_layers, owner)
        self._scalar_mix = build_scalar_mix(scalar_mix, len(self._layers), owner)
        self._dropout = torch.nn.Dropout(p=dropout)
        self._selection = f"wordpiece|layers={self._layers}|max_length={max_length}"
        if mode != FEATURE_EXTRACTION and max(self._layers) < num_layers - 1:
            logger.warning(
                "%s: %s with layers=%s: the layers above %d get no gradient.",
                owner,
                mode,
                self._layers,
                max(self._layers),
            )
        if lora_options is not None:
            # Before the layer groups are formed, so that each LoRA matrix joins its layer's.
            targets = inject_lora(
                self.transformer_model, lora_options, self.config.model_type, owner
            )
            logger.info(
                "%s: LoRA r=%d alpha=%s dropout=%s on %s",
                owner,
                lora_options["r"],
                lora_options["alpha"],
                lora_options["dropout"],
                targets,
            )

        group_names, layer_prefixes = self._find_layer_groups()
        bottom_prefixes = self._find_modules_shared_by_every_layer(layer_prefixes)
        self._setup_freezable(
            encoder_name="transformer_model",
            group_names=group_names,
            layer_prefixes=layer_prefixes,
            bottom_prefixes=bottom_prefixes,
            mode=mode,
            feature_cache=feature_cache,
            serialization_dir=serialization_dir,
            owner=owner,
            tuned_groups=tuned_groups,
            store_frozen_weights=store_frozen_weights,
            base_weights=f"model_name {model_name!r}"
            + (
                f" with override_weights_file {override_weights_file!r}"
                if override_weights_file
                else ""
            ),
        )
        self._layer_list_path: Optional[str] = None
        self._replay_structure: Optional[Tuple[Optional[int]]] = None
        if feature_cache is not None and mode != FEATURE_EXTRACTION:
            if min(self._trainable, default=0) < 2:
                # The experiment library gives every top:K block a cache without knowing the
                # encoder's depth: one that reaches the lowest layer has nothing to cache.
                logger.info(
                    "%s: tuned_groups %r trains the embeddings or the lowest layer, so no "
                    "frozen layer lies below the block and feature_cache is not used.",
                    owner,
                    tuned_groups,
                )
            else:
                layer_list = self._find_layer_list()
                check_prefix_cache(
                    owner,
                    layer_list,
                    shared_layers=self._find_shared_layer_groups() is not None,
                    top_layer_only=self._layers == [self.config.num_hidden_layers],
                    max_length=max_length,
                )
                self._layer_list_path = layer_list

    def _find_layer_groups(self) -> Tuple[List[str], List[List[str]]]:
        """
        The names and module prefixes of `layer_groups()`: `embeddings` (everything below the
        first layer) and one group per layer, from the model's list of `num_hidden_layers`
        layers (`encoder.layer` of BERT, RoBERTa, XLM-R, ELECTRA, DeBERTa, MPNet;
        `transformer.layer` of DistilBERT; `layers` of ModernBERT, whose `final_norm` above
        them joins the top group). ALBERT reuses its layers' weights: one group per
        distinct set of weights (`encoder.albert_layer_groups`), so with `num_hidden_groups: 1`
        (every published ALBERT) `embeddings` and `layers_0-{n-1}`, and gradual unfreezing or
        discriminative learning rates treat the shared stack as one group.

        Modules outside the layer list that every layer reads (`SHARED_BY_EVERY_LAYER`: MPNet's
        `encoder.relative_attention_bias`) join `embeddings`, below the first layer, though
        they are registered after the layers: a group may only hold weights that change its own
        layer's output and those above it. Were the bias in the top group, unfreezing the top
        layer first (gradual unfreezing) would change what every frozen layer below computes,
        and discriminative rates would move it at the top layer's rate; in `embeddings` it
        trains only once the whole encoder does, at the lowest rate, like the position
        embeddings. (`_find_modules_shared_by_every_layer` finds them.)
        """
        num_layers = self.config.num_hidden_layers
        model_name = type(self.transformer_model).__name__
        shared = self._find_shared_layer_groups()
        if shared is not None:
            container, num_groups = shared
            per_group = num_layers // num_groups
            if num_groups == num_layers:
                names = [f"layer_{index}" for index in range(num_layers)]
            else:
                names = [
                    f"layers_{group * per_group}-{(group + 1) * per_group - 1}"
                    for group in range(num_groups)
                ]
                logger.info(
                    "%s: %s's %d layers share %d set(s) of weights (%s), so layer_groups() has "
                    "one group per set: embeddings, %s. Gradual unfreezing and discriminative "
                    "learning rates treat each shared stack as one group.",
                    self._owner,
                    model_name,
                    num_layers,
                    num_groups,
                    container,
                    ", ".join(names),
                )
            prefixes = [[f"{container}.{group}"] for group in range(num_groups)]
            return ["embeddings"] + names, prefixes
        layer_list = self._find_layer_list()
        if layer_list is None:
            # Feature extraction and fine-tuning need only the hidden states; a layer-wise
            # schedule over this encoder sees one group, all or nothing.
            logger.warning(
                "%s: found no torch.nn.ModuleList of num_hidden_layers = %d layers in %s (such "
                "as BERT's encoder.layer or DistilBERT's transformer.layer) and no ALBERT-style "
                "encoder.albert_layer_groups; layer_groups() returns one group, 'encoder', so "
                "gradual unfreezing and discriminative learning rates treat the whole encoder "
                "as one layer.",
                self._owner,
                num_layers,
                model_name,
            )
            return ["encoder"], []
        names = ["embeddings"] + [f"layer_{index}" for index in range(num_layers)]
        return names, [[f"{layer_list}.{index}"] for index in range(num_layers)]

    def _find_modules_shared_by_every_layer(self, layer_prefixes: List[List[str]]) -> List[str]:
        """
        The module paths, outside every layer, whose last name part is in
        `SHARED_BY_EVERY_LAYER` (MPNet: `["encoder.relative_attention_bias"]`), with the norm
        beside each that `SHARED_NORMS` names (DeBERTa-v2: `["encoder.rel_embeddings",
        "encoder.LayerNorm"]`); `[]` when the encoder is one group (no layer list was found).
        """
        if not layer_prefixes:
            return []
        inside = [prefix for prefixes in layer_prefixes for prefix in prefixes]
        modules = dict(self.transformer_model.named_modules())
        found = []
        for name in modules:
            parent, _, last = name.rpartition(".")
            if last not in SHARED_BY_EVERY_LAYER or any(
                name == prefix or name.startswith(prefix + ".") for prefix in inside
            ):
                continue
            found.append(name)
            if last in SHARED_NORMS:
                norm = f"{parent}.{SHARED_NORMS[last]}" if parent else SHARED_NORMS[last]
                if norm in modules:
                    found.append(norm)
        if found:
            logger.info(
                "%s: %s is read by every layer of %s, so it joins the embeddings group (it "
                "trains only once the lowest layer does).",
                self._owner,
                ", ".join(found),
                type(self.transformer_model).__name__,
            )
        return found

    def _find_shared_layer_groups(self) -> Optional[Tuple[str, int]]:
        """ALBERT: the module path of the `albert_layer_groups` list and its length."""
        for name, module in self.transformer_model.named_modules():
            groups = getattr(module, "albert_layer_groups", None)
            if isinstance(groups, torch.nn.ModuleList) and len(groups) > 0:
                num_layers = self.config.num_hidden_layers
                if num_layers % len(groups):
                    raise ConfigurationError(
                        f"{self._owner}: {type(self.transformer_model).__name__} has "
                        f"{num_layers} layers in {len(groups)} weight groups "
                        f"(num_hidden_groups); expected num_hidden_layers to be a multiple of "
                        "num_hidden_groups."
                    )
                return (f"{name}.albert_layer_groups" if name else "albert_layer_groups"), len(
                    groups
                )
        return None

    def _find_layer_list(self) -> Optional[str]:
        for name, module in self.transformer_model.named_modules():
            if (
                isinstance(module, torch.nn.ModuleList)
                and len(module) == self.config.num_hidden_layers
            ):
                return name
        return None

    def _encoder_identity(self) -> str:
        config = self.transformer_model.config.to_dict()
        for volatile in ("_name_or_path", "transformers_version", "output_hidden_states"):
            config.pop(volatile, None)
        return f"{type(self.transformer_model).__name__}|{json.dumps(config, sort_keys=True)}"

    def forward(
        self,
        token_ids: torch.LongTensor,
        mask: torch.BoolTensor,
        type_ids: Optional[torch.LongTensor] = None,
        segment_concat_mask: Optional[torch.BoolTensor] = None,
    ) -> torch.Tensor:  # type: ignore
        """
        Same inputs as AllenNLP's `pretrained_transformer` embedder (the output of the
        `pretrained_transformer` indexer); returns `(batch_size, num_wordpieces, hidden_size)`.
        """
        inputs = self._checked_inputs(token_ids, mask, type_ids, segment_concat_mask)
        lowest = self._cached_block_start()
        if self.uses_feature_cache:
            embeddings = self._mixed_from_cache(inputs)
        elif lowest is not None:
            embeddings = self._mix_layers(
                self._block_over_cache(token_ids, mask, inputs.type_ids, lowest), mask
            )
        else:
            with self._encoder_context():
                layers = self._layer_outputs(inputs)
            embeddings = self._mix_layers(layers, mask)
        return self._dropout(embeddings)

    def _checked_inputs(
        self,
        token_ids: torch.LongTensor,
        mask: torch.BoolTensor,
        type_ids: Optional[torch.LongTensor],
        segment_concat_mask: Optional[torch.BoolTensor],
    ) -> Wordpieces:
        """`forward`'s inputs, their folding checked and their type ids made usable."""
        self._check_folding_inputs(mask, segment_concat_mask)
        if type_ids is not None:
            type_ids = self._usable_type_ids(type_ids)
        return Wordpieces(token_ids, mask, type_ids, segment_concat_mask)

    def _cached_block_start(self) -> Optional[int]:
        """
        The lowest tuned group when the frozen groups below it are served from the feature
        cache (`prefix_cache`): a `fine_tuning` embedder with a cache whose tuned groups leave
        the embeddings and at least one layer frozen, not freezing by masking (DDP needs every
        maskable weight used); `None` otherwise.
        """
        if self._layer_list_path is None or not self._trainable or self._masking_enabled():
            return None
        lowest = min(self._trainable)
        return lowest if lowest >= 2 else None

    def _masking_enabled(self) -> bool:
        return bool(getattr(self, "_masking", False))

    def _block_over_cache(
        self,
        token_ids: torch.LongTensor,
        mask: torch.BoolTensor,
        type_ids: Optional[torch.LongTensor],
        lowest: int,
    ) -> torch.Tensor:
        """
        The top layer `(1, batch_size, num_wordpieces, dim)` of a tuned block whose input,
        the output of the frozen groups below group `lowest` (layers `0 .. lowest - 2`), comes
        from the feature cache (`prefix_cache`).

        # Parameters

        token_ids : `torch.LongTensor`
            Shape: `(batch_size, num_wordpieces)`.
        mask : `torch.BoolTensor`
            Shape: `(batch_size, num_wordpieces)`.
        type_ids : `torch.LongTensor`, optional
            Shape: `(batch_size, num_wordpieces)`; already `_usable_type_ids`.
        """
        cache = self._feature_cache
        assert cache is not None and self._layer_list_path is not None
        layer_list = self.transformer_model.get_submodule(self._layer_list_path)
        frozen_layers = lowest - 1
        last_frozen = layer_list[frozen_layers - 1]
        lengths = mask.sum(-1).tolist()
        prefix = self._prefix_key_prefix(lowest, f"wordpiece|input of layer {frozen_layers}")
        keys = row_keys(prefix, token_ids, type_ids, lengths)
        dim = self.config.hidden_size

        def frozen_output(rows: List[int]) -> torch.Tensor:
            """The last frozen layer's output for `rows`, `(len(rows), width, dim)`."""
            index = torch.tensor(rows, device=token_ids.device)
            width = max(lengths[row] for row in rows)
            parameters = {
                "input_ids": token_ids[index, :width],
                "attention_mask": mask[index, :width].float(),
            }
            if type_ids is not None:
                parameters["token_type_ids"] = type_ids[index, :width]
            with torch.no_grad():
                state, structure = capture_layer_output(
                    last_frozen, lambda: self.transformer_model(**parameters)
                )
            self._replay_structure = (structure,)
            return state

        # Shape: (batch_size, num_wordpieces, dim), zero beyond each row's length.
        state = torch.zeros(len(lengths), mask.size(1), dim, device=token_ids.device)
        entries = [cache.get(key, (1, length, dim)) for key, length in zip(keys, lengths)]
        missing = [row for row, entry in enumerate(entries) if entry is None]
        if missing:
            computed = frozen_output(missing).to(device="cpu", dtype=torch.float16).numpy()
            for column, row in enumerate(missing):
                stored = computed[None, column, : lengths[row]]
                entries[row] = cache.put(keys[row], stored)
        elif self._replay_structure is None:  # every row cached by an earlier run: probe once
            frozen_output([0])
        for row, entry in enumerate(entries):
            state[row, : lengths[row]] = entry[0].to(state.device)  # type: ignore[index]
        assert self._replay_structure is not None
        with replayed_prefix(layer_list, frozen_layers, state, self._replay_structure[0]):
            parameters = {"input_ids": token_ids, "attention_mask": mask.float()}
            if type_ids is not None:
                parameters["token_type_ids"] = type_ids
            outputs = self.transformer_model(**parameters, output_hidden_states=False)
        return outputs.last_hidden_state.unsqueeze(0)

    def _usable_type_ids(self, type_ids: torch.LongTensor) -> Optional[torch.LongTensor]:
        """
        The type ids to give the model, decided by its configuration rather than by the values,
        so that no step waits for the device to read them.

        Without token type embeddings (DistilBERT, MPNet, ModernBERT, DeBERTa-v2/v3 with
        type_vocab_size 0) or with one type (RoBERTa, XLM-R), the pair's segments are marked by
        the separators only; the family's own tokenizer gives no or zero type ids, and
        AllenNLP's pair layout may give 1s: nothing is passed. Otherwise they are passed (all
        zeros are the model's own default). An id beyond the model's types is a
        `ConfigurationError` when the ids are on the CPU, and an asynchronous device assertion
        with the same message elsewhere (checking it on the host would wait for the device).

        # Parameters

        type_ids : `torch.LongTensor`
            Shape: `(batch_size, num_segment_concat_wordpieces)`.
        """
        num_types = self._number_of_token_type_embeddings()
        if num_types <= 1:
            return None
        found = int(type_ids.max()) if type_ids.device.type == "cpu" else f"{num_types} or more"
        message = (
            f"{self._owner}: the input has token type id {found}, but "
            f"{type(self.transformer_model).__name__} has {num_types} token types "
            "(type_vocab_size); use the tokenizer and indexer of the same model_name."
        )
        if type_ids.device.type != "cpu":
            torch._assert_async(type_ids.max() < num_types, message)
        elif found >= num_types:
            raise ConfigurationError(message)
        return type_ids

    def _check_folding_inputs(
        self, mask: torch.BoolTensor, segment_concat_mask: Optional[torch.BoolTensor]
    ) -> None:
        """
        Folding needs `max_length` on both the indexer (which splits long inputs into segments
        and gives `segment_concat_mask`) and this embedder (which folds them), with one value.

        # Parameters

        mask : `torch.BoolTensor`
            Shape: `(batch_size, num_wordpieces)`.
        segment_concat_mask : `torch.BoolTensor`, optional
            Shape: `(batch_size, num_segment_concat_wordpieces)`; given by an indexer with
            `max_length`.
        """
        indexer = (
            "pretrained_transformer_mismatched"
            if self._owner.endswith("_mismatched")
            else "pretrained_transformer"
        )
        if self._max_length is not None and segment_concat_mask is None:
            raise ConfigurationError(
                f"{self._owner}.max_length is {self._max_length}, but the {indexer} indexer has no "
                f"max_length (its output has no segment_concat_mask), so the input cannot be "
                f"folded. Set max_length: {self._max_length} on the indexer too (in the "
                "dataset_reader's token_indexers), or remove it from the embedder."
            )
        if self._max_length is None and segment_concat_mask is not None:
            raise ConfigurationError(
                f"The {indexer} indexer has a max_length (its output has a segment_concat_mask), "
                f"but {self._owner} has none, so the segments would not be folded back. Set the "
                f"indexer's max_length on {self._owner} too, or remove it from the indexer."
            )
        if segment_concat_mask is None:
            return
        # The indexer's segments hold max_length - num_added_tokens wordpieces each, plus the
        # special tokens: with another max_length it gives another number of segment tokens.
        added = self._num_added_start_tokens + self._num_added_end_tokens
        # Shape: (batch_size,)
        inner = (mask.sum(-1) - added).clamp_min(0)
        per_segment = self._max_length - added
        expected = inner + (inner + per_segment - 1).div(per_segment, rounding_mode="floor") * added
        message = (
            f"{self._owner}.max_length is {self._max_length}, but the {indexer} indexer split "
            "the input with another max_length. Set the same max_length on both."
        )
        # Shape: ()
        same = (expected == segment_concat_mask.sum(-1).to(expected.dtype)).all()
        if mask.device.type != "cpu":  # reading it on the host would wait for the device
            torch._assert_async(same, message)
        elif not same:
            raise ConfigurationError(message)

    def _layer_outputs(self, inputs: Wordpieces) -> torch.Tensor:
        """The selected hidden states, `(num_selected_layers, batch, num_wordpieces, dim)`."""
        token_ids, mask, type_ids, segment_concat_mask = inputs
        batch_size, num_segment_concat_wordpieces = token_ids.size()
        fold = self._max_length is not None and num_segment_concat_wordpieces > self._max_length
        if fold:
            token_ids, segment_concat_mask, type_ids = self._fold_long_sequences(
                token_ids, segment_concat_mask, type_ids
            )
        if self._max_positions and token_ids.size(1) > self._max_positions:
            raise ConfigurationError(
                f"{self._owner}: an input has {token_ids.size(1)} wordpieces but the model has "
                f"{self._max_positions} positions. Set max_length (at most "
                f"{self._max_positions}) on both the pretrained_transformer indexer and this "
                "embedder, so that long inputs are folded."
            )
        transformer_mask = segment_concat_mask if self._max_length is not None else mask
        parameters = {
            "input_ids": token_ids,
            "attention_mask": transformer_mask.float(),
            "output_hidden_states": True,
        }
        if type_ids is not None:
            parameters["token_type_ids"] = type_ids
        outputs = self.transformer_model(**parameters)
        hidden_states = getattr(outputs, "hidden_states", None)
        expected = self.config.num_hidden_layers + 1
        if hidden_states is None or len(hidden_states) != expected:
            found = "none" if hidden_states is None else str(len(hidden_states))
            raise ConfigurationError(
                f"{self._owner}: {type(self.transformer_model).__name__} returned {found} "
                f"hidden_states with output_hidden_states=True; the layer mix needs "
                f"num_hidden_layers + 1 = {expected} (the embedding output and every layer's). "
                "Use a transformers encoder whose output has hidden_states, or sub_module to "
                "select it."
            )
        # The top layer is the model's output. ModernBERT applies its final_norm after the last
        # layer, and transformers 4.48-4.5x return the un-normed state as hidden_states[-1] (5
        # returns the output there, as every other family does): so the top group (with
        # final_norm) trains, and "top" means the same on every version.
        last = getattr(outputs, "last_hidden_state", None)
        if last is not None and last.shape == hidden_states[-1].shape:
            hidden_states = tuple(hidden_states[:-1]) + (last,)
        # Stacked along the feature axis so that AllenNLP's unfolding handles all layers at once.
        selected = torch.cat([hidden_states[index] for index in self._layers], dim=-1)
        if fold:
            selected = self._unfold_long_sequences(
                selected, segment_concat_mask, batch_size, num_segment_concat_wordpieces
            )
        return selected.view(batch_size, selected.size(1), len(self._layers), -1).permute(
            2, 0, 1, 3
        )

    def _row_inputs(
        self, inputs: Wordpieces
    ) -> Tuple[List[int], List[int], Callable[[List[int]], torch.Tensor]]:
        """
        Each row's input length (folded form when max_length is set) and unpadded length, and
        `compute(rows)`: the selected layers of those rows alone, `(num_layers, len(rows),
        >= their longest length, dim)`, for the caches' missing rows.
        """
        folded = self._max_length is not None
        input_mask = inputs.segment_concat_mask if folded else inputs.mask
        input_lengths = input_mask.sum(-1).tolist()
        lengths = inputs.mask.sum(-1).tolist()

        def compute(rows: List[int]) -> torch.Tensor:
            index = torch.tensor(rows, device=inputs.token_ids.device)
            input_width = max(input_lengths[row] for row in rows)
            width = max(lengths[row] for row in rows)
            return self._layer_outputs(inputs.rows(index, input_width, width))

        return input_lengths, lengths, compute

    def _mixed_from_cache(self, inputs: Wordpieces) -> torch.Tensor:
        # A row's key covers its ids up to its own length (folded form when max_length is set),
        # so padding and batch composition do not matter.
        input_lengths, lengths, compute = self._row_inputs(inputs)
        prefix = self._cache_key_prefix(self._selection)
        keys = row_keys(prefix, inputs.token_ids, inputs.type_ids, input_lengths)
        return self._mixed_through_cache(
            keys,
            lengths,
            width=inputs.mask.size(1),
            num_layers=len(self._layers),
            dim=self.output_dim,
            compute=compute,
            device=inputs.token_ids.device,
        )
