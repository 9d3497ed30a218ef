"""
Whether a transformers encoder given by name (`tune-compare --encoder`) can be loaded at all,
found out in about a second instead of after transformers' own retries (over a minute without a
network): a local folder is used as it is; a Hugging Face model name must be in the Hugging Face
cache, or, unless `HF_HUB_OFFLINE` / `TRANSFORMERS_OFFLINE` is set, answer one request to the
Hub within `HUB_TIMEOUT_S` seconds, without retries.

Written against every huggingface_hub the lanes install (0.10 with stock AllenNLP, 0.36 in the
lock, 2.x in the modern lock, whose HTTP client is httpx instead of requests): it reads the
cache folders itself, and tells the Hub's answers apart by status code and exception name.

`check_block_modes`: a block mode `topK` / `bottomK` of more layer groups than the encoder has
(`top99` of a 4-layer BERT) is refused before any plan or run, by the embedder's own rule
(`parse_tuned_groups`) over the groups the encoder's config gives.
"""

import os
import re
import shutil
import sys
from pathlib import Path
from typing import List, Mapping, NoReturn, Optional, Sequence

from allennlp.common.checks import ConfigurationError

OFFLINE_VARS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
HUB_TIMEOUT_S = 10.0
_TRUE = ("1", "ON", "YES", "TRUE")
# huggingface_hub's `validate_repo_id`: `name` or `namespace/name`, at most 96 characters.
_MODEL_NAME = re.compile(r"^(\b[\w\-.]+\b/)?\b[\w\-.]+\b$")


def hub_command(*args: str) -> str:
    """
    `download NAME` or `login` on the Hub's command line as installed: `hf` (huggingface_hub
    0.34 and later), else `huggingface-cli login` and, for a download, a line of Python
    (`huggingface-cli download` came in 0.17 only).
    """
    folder = Path(sys.executable).parent
    if (folder / "hf").exists() or shutil.which("hf") is not None:
        return " ".join(["hf", *(("auth", "login") if args == ("login",) else args)])
    if args == ("login",):
        return "huggingface-cli login"
    return f"python -c \"import huggingface_hub; huggingface_hub.snapshot_download('{args[1]}')\""


def offline_var(environ: Mapping[str, str] = os.environ) -> Optional[str]:
    """The variable that puts the Hugging Face libraries offline (`HF_HUB_OFFLINE=1`), if any."""
    for name in OFFLINE_VARS:
        if environ.get(name, "").strip().upper() in _TRUE:
            return f"{name}={environ[name]}"
    return None


def hub_caches(environ: Mapping[str, str] = os.environ) -> List[Path]:
    """
    The folders where transformers looks for downloaded models, the one it writes to first,
    read from the environment now (the libraries read it once, when they are imported).
    """
    from huggingface_hub import constants

    folders = [environ.get(name) for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE")]
    folders.append(os.path.join(environ["HF_HOME"], "hub") if environ.get("HF_HOME") else None)
    folders.append(environ.get("TRANSFORMERS_CACHE"))
    default = getattr(constants, "HF_HUB_CACHE", None) or constants.HUGGINGFACE_HUB_CACHE
    folders.append(default)
    unique = dict.fromkeys(Path(folder).expanduser() for folder in folders if folder)
    return list(unique)


def is_cached(name: str, cache: Path) -> bool:
    """Whether `cache` holds a snapshot of model `name` with its `config.json`."""
    snapshots = cache / f"models--{name.replace('/', '--')}" / "snapshots"
    return any(snapshots.glob("*/config.json"))


def is_model_name(name: str) -> bool:
    """Whether `name` can name a model on the Hub (`bert-base-uncased`, `org/model`)."""
    return (
        len(name) <= 96 and bool(_MODEL_NAME.match(name)) and "--" not in name and ".." not in name
    )


def _reason(error: Exception, timeout: float) -> str:
    """A few words for why a request failed (the HTTP clients' own messages run to lines)."""
    status = _status(error)
    if status is not None:
        return f"it answered HTTP {status}"
    text = str(error)
    for phrase, reason in (
        ("Failed to resolve", "its host name does not resolve"),
        ("Name or service not known", "its host name does not resolve"),
        ("Temporary failure in name resolution", "its host name does not resolve"),
        ("Connection refused", "the connection was refused"),
        ("Network is unreachable", "the network is unreachable"),
        ("timed out", f"no answer within {timeout:g} s"),
        ("Timeout", f"no answer within {timeout:g} s"),
    ):
        if phrase in text or phrase in type(error).__name__:
            return reason
    first = text.strip().splitlines()[0][:200] if text.strip() else ""
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


def _status(error: Exception) -> Optional[int]:
    response = getattr(error, "response", None)
    return getattr(response, "status_code", None)


def _is_a(error: Exception, class_name: str) -> bool:
    return any(klass.__name__ == class_name for klass in type(error).__mro__)


def _ask_hub(name: str, environ: Mapping[str, str], timeout: float) -> None:
    """One request for the model's card: refuses a model the Hub lacks, or a Hub out of reach."""
    from huggingface_hub import HfApi, constants

    endpoint = (environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")
    try:
        HfApi(endpoint=endpoint).model_info(name, timeout=timeout)
    except Exception as error:  # requests' or httpx's, or huggingface_hub's own
        if _is_a(error, "GatedRepoError"):
            raise ConfigurationError(
                f"--encoder {name}: the model is gated on the Hugging Face Hub; accept its "
                f"conditions at {endpoint}/{name} and log in ({hub_command('login')}), or give "
                "a local folder."
            ) from None
        if _is_a(error, "RepositoryNotFoundError") or _status(error) in (401, 404):
            raise ConfigurationError(
                f"--encoder {name}: no such folder, and the Hugging Face Hub ({endpoint}) has "
                f"no model {name} (or it is private: {hub_command('login')}). Check the name, "
                "or give a local folder."
            ) from None
        _unreachable(name, endpoint, error, environ, timeout)


def _unreachable(
    name: str, endpoint: str, error: Exception, environ: Mapping[str, str], timeout: float
) -> NoReturn:
    """Refuses a model that could not be looked up on the Hub, saying why in a few words."""
    raise ConfigurationError(
        f"--encoder {name}: no such folder, not in the Hugging Face cache ({hub_caches(environ)[0]}"
        f"), and the Hugging Face Hub ({endpoint}) cannot be asked: {_reason(error, timeout)}. "
        f"Give a local folder, or download it where the Hub can be reached "
        f"({hub_command('download', name)}) and copy that cache here (or point HF_HUB_CACHE at "
        "it)."
    ) from None


def check_encoder_available(
    name: str, environ: Mapping[str, str] = os.environ, timeout: float = HUB_TIMEOUT_S
) -> None:
    """
    Refuses `--encoder NAME` when it is no local folder and transformers could not load it: not
    a model name, not cached while offline, or unknown to (or unreachable on) the Hub.
    """
    if os.path.isdir(name):
        return
    if os.path.exists(name):
        raise ConfigurationError(
            f"--encoder {name} is a file; give the folder of a transformers model (with its "
            "config.json), or a Hugging Face model name."
        )
    if not is_model_name(name):
        raise ConfigurationError(
            f"--encoder {name}: no such folder, and not a Hugging Face model name (such as "
            "bert-base-uncased or sentence-transformers/all-MiniLM-L6-v2)."
        )
    caches = hub_caches(environ)
    if any(is_cached(name, cache) for cache in caches):
        return
    offline = offline_var(environ)
    if offline:
        raise ConfigurationError(
            f"--encoder {name}: no such folder, and not in the Hugging Face cache ({caches[0]}); "
            f"{offline} is set, so it cannot be downloaded. Give a local folder, or unset "
            f"{offline.split('=')[0]} and download it first: {hub_command('download', name)}."
        )
    _ask_hub(name, environ, timeout)


def check_block_modes(modes: Sequence[str], family: str, model: Optional[str]) -> None:
    """
    Refuses a block mode (`block_groups`) whose K exceeds the encoder's layer groups (its
    embeddings, or ELMo's char CNN, then one per layer), as its embedder would when the run
    builds it: `model` is the transformer's name or folder, or ELMo's options file (only a
    local one is read). An encoder whose size cannot be read is left to the runs.
    """
    from allennlp_tune.modes import block_groups

    blocks = [mode for mode in modes if block_groups(mode) is not None]
    if not blocks or not model:
        return
    from allennlp_tune.modules.token_embedders.freezable import parse_tuned_groups
    from allennlp_tune.planning.encoder_size import elmo_size, transformer_size

    try:
        size = elmo_size(model) if family == "elmo" else transformer_size(model)
    except Exception:  # not readable here: the run's own check says why
        return
    if size is None:
        return
    first, layer = ("char_cnn", "lstm") if family == "elmo" else ("embeddings", "layer")
    names = [first] + [f"{layer}_{index}" for index in range(size.num_layers)]
    for mode in blocks:
        groups = block_groups(mode)
        try:
            parse_tuned_groups(groups, names, "fine_tuning", "embedder")
        except ConfigurationError:
            raise ConfigurationError(
                f"--modes {mode}: {model} has {len(names)} layer groups ({first} and "
                f"{size.num_layers} layers), fewer than the block's {groups.split(':')[1]}; "
                f"give K from 1 to {len(names)} (top{len(names)} or bottom{len(names)} "
                "fine-tunes every group, as ft does)."
            ) from None
