"""
What the three `tune_*` token embedders share: their modes (`EMBEDDER_MODES` of
`allennlp_tune.modes`), the layer selection and its `ScalarMix`, the encoder's parameter groups
with `freeze()` / `unfreeze()`, and the frozen-feature cache. Not registered itself; each
embedder module reads top to bottom with this one beside it.

The state is one set, `trainable_groups()`:

- empty (`mode: "feature_extraction"`, or after `freeze()`): every encoder weight has
  `requires_grad=False`, every encoder module stays in eval mode even after `model.train()`
  (no dropout), the encoder runs under `torch.no_grad()`, and the feature cache (if configured)
  is used. Only the scalar mix (and the rest of the model) trains.
- some or all groups (`mode: "fine_tuning"`, or after `unfreeze(k)`): those groups' weights get
  gradients and their modules follow `model.train()` / `model.eval()`; the groups below stay
  frozen and in eval mode. The cache is bypassed: the weights are about to change.

What a trainable group trains depends on the mode's fixed *parameter filter* (`mode_selects`),
the encoder parameters the mode can ever train: every one in `feature_extraction` and
`fine_tuning`; the biases in `bitfit` (every parameter whose name ends in `bias`, layer norm
biases included, as Ben Zaken et al. 2022); the LoRA matrices in `lora` (`lora_` in the name,
added by `peft`, see `lora.py`). A parameter requires gradients iff its group is trainable and
the filter selects it (when freezing by masking: iff the filter selects it). `bitfit` and `lora`
start with every group trainable, like `fine_tuning` (modules follow `train()` / `eval()`, so
dropout is on while training; no `no_grad`), and callbacks may freeze and unfreeze groups as in
fine-tuning: an unfrozen group then trains its biases / LoRA matrices only.

In `bitfit` and `lora` the embedder's `state_dict()` (hence an AllenNLP archive's weights and
the trainer's checkpoints) leaves out the frozen pretrained weights (the encoder's state that
the filter does not select) and holds a SHA-256 of them instead (`frozen_weights_fingerprint`):
they are read again from `model_name` / `weight_file` when the model is built, and loading
checks the fingerprint, so an archive never runs silently on other base weights.
"""

import hashlib
import logging
import re
from contextlib import nullcontext
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple, Union

import numpy
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.modules.scalar_mix import ScalarMix
from allennlp.nn.util import get_mask_from_sequence_lengths

from allennlp_tune.modes import BITFIT, EMBEDDER_MODES, FEATURE_EXTRACTION, FINE_TUNING, LORA
from allennlp_tune.modules.checks import refuse_unknown_keys
from allennlp_tune.modules.feature_cache import FeatureCache, encoder_fingerprint
from allennlp_tune.modules.layer_groups import register_layer_group_provider

logger = logging.getLogger(__name__)

# Modes that can train only part of the encoder: archives leave the rest out.
PARTIAL_MODES = (BITFIT, LORA)
# The key (after the embedder's prefix) of the frozen weights' fingerprint in `state_dict()`.
FINGERPRINT_KEY = "frozen_weights_fingerprint"
SCALAR_MIX_KEYS = ("do_layer_norm", "initial_scalar_parameters", "trainable")

# (group name, [(parameter name, parameter), ...]), bottom to top.
LayerGroups = List[Tuple[str, List[Tuple[str, torch.nn.Parameter]]]]


def mode_selects(mode: str, name: str) -> bool:
    """
    The parameter filter of `mode`: whether it can ever train the encoder parameter `name`.
    `bitfit`: names ending in `bias`; `lora`: names containing `lora_`; otherwise all.
    """
    if mode == BITFIT:
        return name.endswith("bias")
    if mode == LORA:
        return "lora_" in name
    return True


def check_mode(
    mode: str,
    feature_cache: Optional[Dict[str, Any]],
    owner: str,
    caches_below_block: bool = False,
) -> str:
    """
    Checks `mode` and its combination with `feature_cache`, before any weight is loaded.
    `caches_below_block`: the embedder can serve the frozen groups below a tuned block from the
    cache (`prefix_cache`), so `fine_tuning` may have one too.
    """
    if mode not in EMBEDDER_MODES:
        raise ConfigurationError(
            f"{owner}.mode is {mode!r}; expected 'feature_extraction' (frozen encoder, only the "
            "scalar mix and the task model train), 'fine_tuning' (the encoder trains too), "
            "'bitfit' (only the encoder's biases train) or 'lora' (only LoRA matrices added to "
            "the encoder's linear layers train)."
        )
    if (
        feature_cache is not None
        and mode != FEATURE_EXTRACTION
        and not (mode == FINE_TUNING and caches_below_block)
    ):
        trains = {
            FINE_TUNING: "the encoder trains",
            BITFIT: "the encoder's biases train",
            LORA: "the encoder's LoRA matrices train",
        }[mode]
        raise ConfigurationError(
            f"{owner}.feature_cache is set but {owner}.mode is {mode!r}: {trains}, so its "
            "features change at every step, and cached features are only valid for a frozen "
            'encoder. Remove feature_cache, or use mode: "feature_extraction".'
        )
    return mode


def parse_layers(layers: Union[str, Sequence[int]], num_layers: int, owner: str) -> List[int]:
    """
    `"all"` -> every layer `0 .. num_layers - 1` (0 is the embedding / char-CNN layer), `"top"` ->
    the last one, a list -> those indices (negative ones count from the top), sorted.
    """
    valid = (
        f'expected "all", "top" or a list of layer indices in 0..{num_layers - 1} '
        f"(0 is the embedding layer, {num_layers - 1} the top layer; negative indices count "
        "from the top)"
    )
    if layers == "all":
        return list(range(num_layers))
    if layers == "top":
        return [num_layers - 1]
    if isinstance(layers, str) or not isinstance(layers, (list, tuple)) or not layers:
        raise ConfigurationError(f"{owner}.layers is {layers!r}; {valid}.")
    indices = []
    for layer in layers:
        if isinstance(layer, bool) or not isinstance(layer, int):
            raise ConfigurationError(f"{owner}.layers contains {layer!r}; {valid}.")
        if not -num_layers <= layer < num_layers:
            raise ConfigurationError(
                f"{owner}.layers contains {layer}, but this encoder has {num_layers} layers; "
                f"{valid}."
            )
        indices.append(layer % num_layers)
    if len(set(indices)) != len(indices):
        raise ConfigurationError(f"{owner}.layers {list(layers)} names a layer twice; {valid}.")
    return sorted(indices)


def parse_tuned_groups(spec: str, group_names: Sequence[str], mode: str, owner: str) -> Set[int]:
    """
    The layer groups that `tuned_groups` names, as indices bottom to top (0 = the embeddings or
    ELMo's char CNN): `"all"`; `"top:K"`, the K highest groups; `"bottom:K"`, the K lowest; a
    range `"I-J"` of group indices (both included); or group names separated by commas
    (`"embeddings,layer_0"`). The other groups stay frozen (no gradient, eval mode) from the
    start, as in feature extraction: surgical fine-tuning of one block (Lee et al., 2023) and
    `freeze_to(n)` in fastai. `feature_extraction` trains no group, so it takes only `"all"`.
    """
    count = len(group_names)
    names = ", ".join(f"{index}={name}" for index, name in enumerate(group_names))
    fix = (
        f'Give "all", "top:K" or "bottom:K" with K in 1..{count}, a range "I-J" of group '
        f"indices, or group names separated by commas; this encoder's groups are {names}."
    )
    if not isinstance(spec, str):
        raise ConfigurationError(f"{owner}.tuned_groups is {spec!r}, not a string. {fix}")
    text = spec.strip()
    if text == "all":
        return set(range(count))
    if mode == FEATURE_EXTRACTION:
        raise ConfigurationError(
            f'{owner}.tuned_groups is {spec!r} but {owner}.mode is "feature_extraction", which '
            'trains no group. Use mode "fine_tuning" (or "bitfit", "lora") with tuned_groups, '
            'or leave tuned_groups at "all".'
        )
    match = re.fullmatch(r"(top|bottom):(\d+)", text)
    if match:
        k = int(match.group(2))
        if not 1 <= k <= count:
            raise ConfigurationError(f"{owner}.tuned_groups is {spec!r}: K out of range. {fix}")
        return set(range(count - k, count)) if match.group(1) == "top" else set(range(k))
    match = re.fullmatch(r"(\d+)-(\d+)", text)
    if match:
        low, high = int(match.group(1)), int(match.group(2))
        if not low <= high < count:
            raise ConfigurationError(f"{owner}.tuned_groups is {spec!r}: not a range. {fix}")
        return set(range(low, high + 1))
    if not text:
        raise ConfigurationError(f"{owner}.tuned_groups is empty. {fix}")
    chosen = [name.strip() for name in text.split(",")]
    unknown = [name for name in chosen if name not in group_names]
    if unknown:
        raise ConfigurationError(
            f"{owner}.tuned_groups is {spec!r}: {', '.join(map(repr, unknown))} is not a "
            f"group. {fix}"
        )
    return {list(group_names).index(name) for name in chosen}


def build_scalar_mix(
    config: Optional[Dict[str, Any]], num_layers: int, owner: str
) -> Optional[ScalarMix]:
    """An `allennlp.modules.ScalarMix` over `num_layers` layers, or `None` for a single layer."""
    config = dict(config or {})
    refuse_unknown_keys(config, SCALAR_MIX_KEYS, f"{owner}.scalar_mix")
    initial = config.get("initial_scalar_parameters")
    if initial is not None and len(initial) != num_layers:
        raise ConfigurationError(
            f"{owner}.scalar_mix.initial_scalar_parameters has {len(initial)} values but "
            f"{owner}.layers selects {num_layers} layers; give one value per selected layer."
        )
    if num_layers == 1:
        if config:
            logger.info("%s: one layer selected, so scalar_mix %s is not used.", owner, config)
        return None
    return ScalarMix(
        num_layers,
        do_layer_norm=bool(config.get("do_layer_norm", False)),
        initial_scalar_parameters=initial,
        trainable=bool(config.get("trainable", True)),
    )


def assign_groups(
    encoder: torch.nn.Module,
    layer_prefixes: List[List[str]],
    bottom_prefixes: Sequence[str] = (),
) -> Tuple[Dict[str, Optional[int]], List[List[str]]]:
    """
    Splits `encoder` into `len(layer_prefixes) + 1` groups, bottom to top: group `i >= 1` holds
    the modules named by `layer_prefixes[i - 1]` (and everything below them); group 0 holds
    every other module registered before the first layer (the embeddings, the char-CNN) and the
    modules named by `bottom_prefixes` wherever they are registered (a table that every layer
    reads, such as MPNet's relative position bias: it must not train before the lowest layer
    that uses it); other modules registered after the layers (a final layer norm) join the top
    group. Containers of the layers belong to no group.

    Returns the group of every module name (`None` for containers) and the parameter names of
    every group, each parameter in exactly one group.
    """
    top = len(layer_prefixes)

    def layer_of(name: str) -> Optional[int]:
        for group, prefixes in enumerate(layer_prefixes, start=1):
            if any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes):
                return group
        return None

    def at_bottom(name: str) -> bool:
        return any(name == prefix or name.startswith(prefix + ".") for prefix in bottom_prefixes)

    containers = {""}
    for prefixes in layer_prefixes:
        for prefix in prefixes:
            parts = prefix.split(".")
            containers.update(".".join(parts[:end]) for end in range(1, len(parts)))

    def grouped(names: Iterable[str], ungrouped: Set[str]) -> List[Tuple[str, Optional[int]]]:
        """Each name's group: its layer's; before the first layer the bottom group, after it
        the top one; `None` for a name in `ungrouped` outside any layer or the bottom."""
        result, seen_layer = [], False
        for name in names:
            group = layer_of(name)
            if group is not None:
                seen_layer = True
            elif at_bottom(name):
                group = 0
            elif name not in ungrouped:
                group = top if seen_layer else 0
            result.append((name, group))
        return result

    module_names = (name for name, _ in encoder.named_modules())
    module_groups: Dict[str, Optional[int]] = dict(grouped(module_names, containers))

    parameter_groups: List[List[str]] = [[] for _ in range(top + 1)]
    for name, group in grouped((name for name, _ in encoder.named_parameters()), set()):
        parameter_groups[group].append(name)
    return module_groups, parameter_groups


def _leave_out_frozen_weights(module, state_dict, prefix: str, local_metadata) -> None:
    """
    `state_dict()` post hook of the embedders: in `bitfit` / `lora`, and in
    `feature_extraction` without `store_frozen_weights`, drops the encoder entries the mode
    cannot train and adds their fingerprint.
    """
    if not module._leaves_weights_out:
        return
    encoder_prefix = module._encoder_name + "."
    start = prefix + encoder_prefix
    for key in [key for key in state_dict if key.startswith(start)]:
        if module._leaves_out(key[len(prefix) :], encoder_prefix):
            del state_dict[key]
    fingerprint = module.frozen_weights_fingerprint()
    state_dict[prefix + FINGERPRINT_KEY] = torch.tensor(list(fingerprint), dtype=torch.uint8)


def _allow_missing_frozen_weights(module, incompatible_keys) -> None:
    """
    `load_state_dict()` post hook: once the fingerprint of the frozen weights matched (in
    `_load_from_state_dict`), their absence is expected: they are the pretrained ones already.
    """
    prefix, module._loading_prefix = module._loading_prefix, None
    if prefix is None:
        return
    encoder_prefix = module._encoder_name + "."
    missing = incompatible_keys.missing_keys
    missing[:] = [
        key
        for key in missing
        if not (key.startswith(prefix) and module._leaves_out(key[len(prefix) :], encoder_prefix))
    ]


class FreezableEncoderMixin:
    """
    Mixed into the `tune_*` embedders (before `torch.nn.Module` in the bases). A subclass calls
    `_setup_freezable` at the end of its constructor and implements `_encoder_identity()`.
    """

    _encoder_name: str
    _group_names: List[str]
    _group_parameter_names: List[List[str]]
    _module_groups: Dict[str, Optional[int]]
    _mode: str
    _mode_selected: Set[str]
    _base_weights: str
    _trainable: Set[int]
    _feature_cache: Optional[FeatureCache]
    _fingerprint: Optional[str]
    _prefix_fingerprints: Dict[int, str]  # `_prefix_key_prefix`'s, by lowest tuned group
    _scalar_mix: Optional[ScalarMix]
    training: bool

    def _setup_freezable(
        self,
        *,
        encoder_name: str,
        group_names: List[str],
        layer_prefixes: List[List[str]],
        bottom_prefixes: Sequence[str] = (),
        mode: str,
        feature_cache: Optional[Dict[str, Any]],
        serialization_dir: Optional[str],
        owner: str,
        base_weights: str = "the pretrained weights",
        tuned_groups: str = "all",
        store_frozen_weights: bool = True,
    ) -> None:
        """
        `layer_prefixes` and `bottom_prefixes` are `assign_groups`'s. `base_weights` says where
        the pretrained weights come from (`model_name ...`), for the error when an archive's
        fingerprint of its frozen weights does not match them. `tuned_groups` is the
        embedder's parameter (`parse_tuned_groups`): the groups that train from the start.
        `store_frozen_weights` false leaves a `feature_extraction` encoder's weights (all
        frozen) out of `state_dict()`, checkpoints and archives, as `bitfit` and `lora` leave
        out theirs: a light frozen head's checkpoint is then its few trained numbers.
        """
        if not store_frozen_weights and mode != FEATURE_EXTRACTION:
            raise ConfigurationError(
                f"{owner}.store_frozen_weights false is for mode feature_extraction, whose "
                f"encoder never trains; mode {mode!r} trains it, so its weights are stored."
            )
        self._leaves_weights_out = mode in PARTIAL_MODES or not store_frozen_weights
        encoder = getattr(self, encoder_name)
        module_groups, parameter_groups = assign_groups(encoder, layer_prefixes, bottom_prefixes)
        self._encoder_name = encoder_name
        self._group_names = list(group_names)
        self._module_groups = module_groups
        self._group_parameter_names = [
            [f"{encoder_name}.{name}" for name in names] for names in parameter_groups
        ]
        self._mode = mode
        self._mode_selected = {
            f"{encoder_name}.{name}"
            for names in parameter_groups
            for name in names
            if mode_selects(mode, name)
        }
        if not self._mode_selected:
            raise ConfigurationError(
                f"{owner}.mode is {mode!r}, but the encoder has no parameter that this mode "
                "trains (no bias for bitfit, no LoRA matrix for lora). Use another mode."
            )
        self._base_weights = base_weights
        self._base_fingerprint: Optional[bytes] = None
        self._loading_prefix: Optional[str] = None
        tuned = parse_tuned_groups(tuned_groups, self._group_names, mode, owner)
        self._trainable = set() if mode == FEATURE_EXTRACTION else tuned
        self._fingerprint = None
        self._prefix_fingerprints = {}
        self._feature_cache = None
        if feature_cache is not None:
            self._feature_cache = FeatureCache.from_config(feature_cache, serialization_dir, owner)
        self._apply_trainable()
        # So that the `discriminative` optimizer finds the groups from the scalar mix's parameters.
        register_layer_group_provider(self)  # type: ignore[arg-type]
        # Hooks are plain functions: torch marks a public state-dict hook with an attribute.
        register = getattr(self, "register_state_dict_post_hook", None)
        if register is None:  # torch < 2.0 (1.12 in stock AllenNLP 2.10.1): the private twin
            register = self._register_state_dict_hook  # type: ignore[attr-defined]
        register(_leave_out_frozen_weights)
        self.register_load_state_dict_post_hook(_allow_missing_frozen_weights)  # type: ignore

    # ---- the API the training callbacks use -------------------------------------------------

    def layer_groups(self) -> LayerGroups:
        """
        The encoder's parameters in named groups, bottom to top (`embeddings` or `char_cnn`
        first, then one group per layer), each a list of `(name, parameter)` pairs named as in
        `self.named_parameters()`. Every encoder parameter is in exactly one group; the scalar
        mix is in none (see `scalar_mix_parameters()`).
        """
        parameters = dict(self.named_parameters())  # type: ignore[attr-defined]
        return [
            (group_name, [(name, parameters[name]) for name in names])
            for group_name, names in zip(self._group_names, self._group_parameter_names)
        ]

    def layer_group_names(self) -> List[str]:
        """The group names of `layer_groups()`, e.g. `["embeddings", "layer_0", ...]`."""
        return list(self._group_names)

    @property
    def mode(self) -> str:
        """The configured mode: its parameter filter never changes; the trainable groups do."""
        return self._mode

    def mode_parameters(self) -> List[Tuple[str, torch.nn.Parameter]]:
        """
        The encoder parameters the mode can ever train (its parameter filter), named as in
        `self.named_parameters()`, in `layer_groups()` order: every one in feature extraction
        and fine-tuning, the biases in `bitfit`, the LoRA matrices in `lora`. Those of the
        groups in `trainable_groups()` train now; the scalar mix is not included.
        """
        return [
            (name, parameter)
            for _, group in self.layer_groups()
            for name, parameter in group
            if name in self._mode_selected
        ]

    def stored_parameter_names(self) -> List[str]:
        """
        The names (as in `self.named_parameters()`) of the parameters that `state_dict()`, and
        so an archive, holds: all of them, except in `bitfit` and `lora`, where the encoder's
        parameters outside `mode_parameters()` (the frozen pretrained weights, read again from
        the pretrained model when the archive loads) are left out, and in `feature_extraction`
        with `store_frozen_weights` false, where all of the encoder's are. The scalar mix is
        stored.
        """
        encoder_prefix = self._encoder_name + "."
        return [
            name
            for name, _ in self.named_parameters()  # type: ignore[attr-defined]
            if not self._leaves_out(name, encoder_prefix)
        ]

    def scalar_mix_parameters(self) -> List[Tuple[str, torch.nn.Parameter]]:
        """The scalar mix's weights and gamma (empty when a single layer is selected)."""
        return [
            (name, parameter)
            for name, parameter in self.named_parameters()  # type: ignore[attr-defined]
            if name.startswith("_scalar_mix.")
        ]

    @property
    def encoder(self) -> torch.nn.Module:
        """The pretrained encoder whose parameters `layer_groups()` lists."""
        return getattr(self, self._encoder_name)

    def trainable_groups(self) -> List[int]:
        """Indices into `layer_groups()` of the groups that currently train."""
        return sorted(self._trainable)

    @property
    def is_frozen(self) -> bool:
        """True when no encoder group trains (feature extraction)."""
        return not self._trainable

    def freeze(self) -> None:
        """Freezes the whole encoder: feature extraction (the cache applies again)."""
        self._set_trainable(set())

    def unfreeze(self, top_k_groups: Optional[int] = None) -> None:
        """
        Makes the top `top_k_groups` groups trainable (all of them when `None`); groups below
        keep their current state. Their modules follow `train()` / `eval()` again, autograd runs
        through them, and the feature cache is bypassed from now on.

        AllenNLP builds its optimizer from the parameters that require gradients when training
        starts: to train groups unfrozen later, use allennlp-tune's `discriminative` optimizer,
        which includes the frozen groups (or start in `fine_tuning` and freeze by masking).
        """
        num_groups = len(self._group_names)
        if top_k_groups is None:
            top_k_groups = num_groups
        if isinstance(top_k_groups, bool) or not isinstance(top_k_groups, int):
            raise ValueError(f"unfreeze(top_k_groups) needs an int or None, not {top_k_groups!r}")
        if not 0 <= top_k_groups <= num_groups:
            raise ValueError(
                f"unfreeze({top_k_groups}): this encoder has {num_groups} groups "
                f"({', '.join(self._group_names)}); give 0..{num_groups} or None for all."
            )
        self._set_trainable(self._trainable | set(range(num_groups - top_k_groups, num_groups)))

    # ---- modes -------------------------------------------------------------------------------

    def train(self, mode: bool = True):
        self.training = mode
        for module in self.children():  # type: ignore[attr-defined]
            module.train(mode)
        self._apply_modes()
        return self

    def _set_trainable(self, groups: Set[int]) -> None:
        # Weights change only while some group trains: fingerprint them again after such a
        # phase (they may have changed) or from now on (they will), not on frozen -> frozen.
        if groups or self._trainable:
            self._fingerprint = None
        self._prefix_fingerprints = {}
        self._trainable = set(groups)
        self._apply_trainable()

    def freeze_by_masking(self, enabled: bool = True) -> None:
        """
        Distributed training: from now on every encoder weight that the mode can train (all of
        them but in `bitfit` / `lora`, see `mode_parameters()`) keeps `requires_grad=True`,
        whatever the trainable set (DDP only synchronises the parameters that require gradients
        when it wraps the model, and breaks when that changes later), and a training callback
        discards the frozen groups' gradients instead. Everything else about a frozen group is
        as usual: eval mode (no dropout), and while no group trains, `torch.no_grad()` and the
        feature cache. Called by the `tune_torch` DDP accelerator before it wraps the model, and
        by the adaptation callbacks when they freeze by masking.
        """
        self._masking = enabled
        self._apply_trainable()

    def _apply_trainable(self) -> None:
        parameters = dict(self.named_parameters())  # type: ignore[attr-defined]
        masking = getattr(self, "_masking", False)
        for group, names in enumerate(self._group_parameter_names):
            for name in names:
                selected = name in self._mode_selected
                parameters[name].requires_grad_(selected and (masking or group in self._trainable))
        self._apply_modes()

    def _apply_modes(self) -> None:
        if not hasattr(self, "_module_groups"):
            return  # train() called during construction
        encoder = getattr(self, self._encoder_name)
        any_trainable = bool(self._trainable)
        for name, module in encoder.named_modules():
            group = self._module_groups.get(name)
            trains = any_trainable if group is None else group in self._trainable
            module.training = self.training and trains

    def _encoder_context(self):
        """`torch.no_grad()` while frozen: no autograd graph through the encoder."""
        return torch.no_grad() if self.is_frozen else nullcontext()

    # ---- what state_dict() holds in bitfit and lora ------------------------------------------

    def _leaves_out(self, name: str, encoder_prefix: str) -> bool:
        """Whether `state_dict()` leaves out the entry `name` (relative to this module)."""
        if not self._leaves_weights_out or not name.startswith(encoder_prefix):
            return False
        return self._mode == FEATURE_EXTRACTION or name not in self._mode_selected

    def frozen_weights_fingerprint(self) -> bytes:
        """
        SHA-256 over the name, dtype, shape and bytes of every encoder `state_dict()` entry that
        the mode cannot train (what `bitfit` / `lora` archives leave out). Computed once: those
        weights never change in these modes (loading a state dict recomputes it).
        """
        if self._base_fingerprint is None:
            encoder_prefix = self._encoder_name + "."
            digest = hashlib.sha256(f"frozen weights|{self._mode}".encode())
            for name, tensor in self.encoder.state_dict().items():
                if not self._leaves_out(encoder_prefix + name, encoder_prefix):
                    continue
                tensor = tensor.detach().cpu().contiguous().reshape(-1)
                digest.update(f"|{name}|{tensor.dtype}|{tensor.numel()}|".encode())
                if tensor.numel():
                    digest.update(tensor.view(torch.uint8).numpy().data)
            self._base_fingerprint = digest.digest()
        return self._base_fingerprint

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, errors
    ):
        # Loading an archive replaces the weights that the fingerprints were taken from.
        self._fingerprint = None
        self._prefix_fingerprints = {}
        self._loading_prefix = None
        stored = state_dict.pop(prefix + FINGERPRINT_KEY, None)
        if stored is not None:
            expected = self.frozen_weights_fingerprint()
            if bytes(stored.cpu().to(torch.uint8).tolist()) != expected:
                raise ConfigurationError(
                    f"These weights were trained in mode {self._mode!r} on other frozen "
                    f"pretrained weights than {self._base_weights} gives now: the archive holds "
                    "only the weights the mode trains and relies on the pretrained ones for the "
                    "rest, and their fingerprints differ (changed or replaced files, another "
                    "model, or another mode or lora configuration). Load it with the pretrained "
                    "weights it was trained on."
                )
            self._loading_prefix = prefix  # `_allow_missing_frozen_weights` accepts their absence
        super()._load_from_state_dict(  # type: ignore[misc]
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, errors
        )
        self._base_fingerprint = None

    # ---- the feature cache -------------------------------------------------------------------

    @property
    def feature_cache(self) -> Optional[FeatureCache]:
        return self._feature_cache

    @property
    def uses_feature_cache(self) -> bool:
        return self._feature_cache is not None and self.is_frozen

    def _encoder_identity(self) -> str:
        raise NotImplementedError

    def _cache_key_prefix(self, selection: str):
        if self._fingerprint is None:
            encoder = getattr(self, self._encoder_name)
            self._fingerprint = encoder_fingerprint(encoder, self._encoder_identity())
        return FeatureCache.key_prefix(self._fingerprint, selection)

    def _prefix_key_prefix(self, lowest: int, selection: str):
        """
        The key prefix of the cached input of group `lowest` (the frozen groups below it are
        its source): the fingerprint covers those groups' weights and buffers only, as the
        groups from `lowest` up train.
        """
        if lowest not in self._prefix_fingerprints:
            encoder = getattr(self, self._encoder_name)

            def below(name: str) -> bool:
                group = self._module_groups.get(name.rsplit(".", 1)[0] if "." in name else "")
                return group is not None and group < lowest

            identity = f"{self._encoder_identity()}|groups below {lowest}"
            self._prefix_fingerprints[lowest] = encoder_fingerprint(encoder, identity, below)
        return FeatureCache.key_prefix(self._prefix_fingerprints[lowest], selection)

    def _mix_layers(self, layers: torch.Tensor, mask: torch.BoolTensor) -> torch.Tensor:
        """
        Mixes `layers` `(num_selected, ..., dim)` with the scalar mix (`mask` is `(...)`). Without
        layer norm this is `ScalarMix`'s formula, `gamma * sum_k softmax(w)_k * layer_k`, with
        its parameters, computed in one `tensordot` (a fraction of the memory traffic of
        `ScalarMix.forward`'s per-layer products and sums, which dominates an epoch read from
        the cache); with layer norm it is `ScalarMix.forward` itself.
        """
        scalar_mix = self._scalar_mix
        if scalar_mix is None:
            return layers[0]
        if scalar_mix.do_layer_norm:
            return scalar_mix(list(layers.unbind(0)), mask)
        weights = torch.softmax(torch.cat(list(scalar_mix.scalar_parameters)), dim=0)
        # gamma scales the layer weights rather than the output: one pass less over the features.
        return torch.tensordot(scalar_mix.gamma * weights, layers, dims=1)

    def _mixed_through_cache(
        self,
        keys: List[str],
        lengths: List[int],
        width: int,
        num_layers: int,
        dim: int,
        compute: Callable[[List[int]], torch.Tensor],
        device: torch.device,
    ) -> torch.Tensor:
        """
        The mixed output `(batch_size, width, dim)`, zero beyond each row's length, for
        sequences whose cache keys and unpadded lengths are given. Missing rows are computed
        together by `compute(rows)`, which returns `(num_layers, len(rows), >= max length, dim)`,
        and stored. Every row goes through float16, so an epoch that computes a row and one that
        reads it see the same values.

        The rows are mixed packed, without padding: `(num_layers, sum(lengths), dim)`. Layer
        norm statistics are over the unmasked positions, as with a mask.
        """
        cache = self._feature_cache
        assert cache is not None
        entries: List[Optional[torch.Tensor]] = [
            cache.get(key, (num_layers, length, dim)) for key, length in zip(keys, lengths)
        ]
        missing = [row for row, entry in enumerate(entries) if entry is None]
        if missing:
            with torch.no_grad():
                computed = compute(missing).to(device="cpu", dtype=torch.float16).numpy()
            for column, row in enumerate(missing):
                entries[row] = cache.put(keys[row], computed[:, column, : lengths[row]])
        # numpy's single-threaded concatenation: torch's cat or copy_ per entry opens one
        # thread-parallel region per entry, which costs more than the copy on a busy CPU.
        packed = torch.from_numpy(
            numpy.concatenate([entry.numpy() for entry in entries], axis=1)  # type: ignore
        ).to(device)
        mask = torch.ones(packed.size(1), dtype=torch.bool, device=device)
        mixed = self._mix_layers(packed, mask)
        # Back to (batch, width, dim) with one index_copy: its backward is one index_select,
        # where pad_sequence's backward copies the whole gradient once per row.
        row_lengths = torch.tensor(lengths, device=device)
        positions = get_mask_from_sequence_lengths(row_lengths, width).view(-1).nonzero()
        padded = mixed.new_zeros(len(lengths) * width, dim)
        return padded.index_copy(0, positions.squeeze(1), mixed).view(len(lengths), width, dim)
