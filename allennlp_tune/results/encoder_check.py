"""
Whether a transformers encoder given by name (`tune-compare --encoder`) can be loaded at all,
found out in about a second instead of after transformers' own retries (over a minute without a
network): a local folder is used as it is; a Hugging Face model name must be in the Hugging Face
cache, or, unless `HF_HUB_OFFLINE` / `TRANSFORMERS_OFFLINE` is set, answer one request to the
Hub within `HUB_TIMEOUT_S` seconds, without retries.
"""

import os
from pathlib import Path
from typing import Mapping, NoReturn, Optional

from allennlp.common.checks import ConfigurationError

OFFLINE_VARS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
HUB_TIMEOUT_S = 10.0
_TRUE = ("1", "ON", "YES", "TRUE")


def offline_var(environ: Mapping[str, str] = os.environ) -> Optional[str]:
    """The variable that puts the Hugging Face libraries offline (`HF_HUB_OFFLINE=1`), if any."""
    for name in OFFLINE_VARS:
        if environ.get(name, "").strip().upper() in _TRUE:
            return f"{name}={environ[name]}"
    return None


def hub_cache(environ: Mapping[str, str] = os.environ) -> Path:
    """The Hugging Face cache folder, read from the environment now (the libraries read it once)."""
    from huggingface_hub import constants

    if environ.get("HF_HUB_CACHE"):
        return Path(environ["HF_HUB_CACHE"]).expanduser()
    if environ.get("HF_HOME"):
        return Path(environ["HF_HOME"]).expanduser() / "hub"
    return Path(constants.HF_HUB_CACHE)


def is_cached(name: str, cache: Path) -> bool:
    """Whether the cache holds a snapshot of model `name` with its `config.json`."""
    from huggingface_hub import try_to_load_from_cache

    if isinstance(try_to_load_from_cache(name, "config.json", cache_dir=cache), str):
        return True
    snapshots = cache / f"models--{name.replace('/', '--')}" / "snapshots"
    return any(snapshots.glob("*/config.json"))


def _is_model_name(name: str) -> bool:
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(name)
    except HFValidationError:
        return False
    return True


def _reason(error: Exception, timeout: float) -> str:
    """A few words for why a request failed (requests' own messages run to several lines)."""
    text = str(error)
    for phrase, reason in (
        ("Failed to resolve", "its host name does not resolve"),
        ("Name or service not known", "its host name does not resolve"),
        ("Connection refused", "the connection was refused"),
        ("Network is unreachable", "the network is unreachable"),
        ("timed out", f"no answer within {timeout:g} s"),
        ("Timeout", f"no answer within {timeout:g} s"),
    ):
        if phrase in text or phrase in type(error).__name__:
            return reason
    return f"{type(error).__name__}: {text.splitlines()[0][:200] if text else ''}"


def _ask_hub(name: str, fix: str, environ: Mapping[str, str], timeout: float) -> None:
    """One request for the model's card: refuses a model the Hub lacks, or a Hub out of reach."""
    import requests
    from huggingface_hub import HfApi, constants
    from huggingface_hub.utils import GatedRepoError, HfHubHTTPError, RepositoryNotFoundError

    endpoint = environ.get("HF_ENDPOINT") or constants.ENDPOINT
    try:
        HfApi(endpoint=endpoint).model_info(name, timeout=timeout)
    except GatedRepoError:
        raise ConfigurationError(
            f"--encoder {name}: the model is gated on the Hugging Face Hub; accept its "
            f"conditions at {endpoint}/{name} and log in (huggingface-cli login), or {fix}."
        ) from None
    except (RepositoryNotFoundError, HfHubHTTPError) as error:
        if not isinstance(error, RepositoryNotFoundError) and _status(error) != 404:
            _unreachable(name, endpoint, error, environ, timeout)
        raise ConfigurationError(
            f"--encoder {name}: no such folder, and the Hugging Face Hub ({endpoint}) has no "
            f"model {name} (or it is private: huggingface-cli login). Check the name, or give "
            "a local folder."
        ) from None
    except (requests.RequestException, OSError) as error:
        _unreachable(name, endpoint, error, environ, timeout)


def _status(error: Exception) -> Optional[int]:
    response = getattr(error, "response", None)
    return getattr(response, "status_code", None)


def _unreachable(
    name: str, endpoint: str, error: Exception, environ: Mapping[str, str], timeout: float
) -> NoReturn:
    """Refuses a model that could not be looked up on the Hub, saying why in a few words."""
    raise ConfigurationError(
        f"--encoder {name}: no such folder, not in the Hugging Face cache ({hub_cache(environ)}), "
        f"and the Hugging Face Hub ({endpoint}) cannot be reached: {_reason(error, timeout)}. "
        f"Give a local folder, or download it where the Hub can be reached (huggingface-cli "
        f"download {name}) and copy that cache here (or point HF_HUB_CACHE at it)."
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
    if not _is_model_name(name):
        raise ConfigurationError(
            f"--encoder {name}: no such folder, and not a Hugging Face model name (such as "
            "bert-base-uncased or sentence-transformers/all-MiniLM-L6-v2)."
        )
    cache = hub_cache(environ)
    if is_cached(name, cache):
        return
    fix = f"download it first: huggingface-cli download {name}"
    offline = offline_var(environ)
    if offline:
        raise ConfigurationError(
            f"--encoder {name}: no such folder, and not in the Hugging Face cache ({cache}); "
            f"{offline} is set, so it cannot be downloaded. Give a local folder, or unset "
            f"{offline.split('=')[0]} and {fix}."
        )
    _ask_hub(name, fix, environ, timeout)
