"""
What made a run, and whether a finished run still matches the command that would train it now.

tune-grid and tune-compare skip a finished run. That is only right when the run is the one the
command would train: same rendered config, same data, same encoder, same code. Three things
decide what a run learned, and each is compared before a run is reused:

1. the rendered config, every ext var and override resolved: AllenNLP writes it into the run as
   `config.json`, and `config_differences` compares it key by key with the config the command
   renders now (seeds and the device the run used are not differences; `IGNORED_KEYS`);
2. the content of every local file or folder the config names (training and dev data, a label
   file, the encoder's folder, ELMo's weights): a path is only a name, so each is recorded as a
   content digest (`sha256`) and compared as one; a hub model name is recorded with the revision
   of its cached snapshot;
3. the versions of the packages that compute the result (`RESULT_PACKAGES`).

`fingerprint(config)` records 2 and 3 for `tune_run.json` when the run starts; `differences`
compares a finished run with the config that would train it now and says, in words, what
changed (`trainer.optimizer.lr 2e-05 -> 0.001`, `dev.csv changed`). A run written before runs
carried a fingerprint is compared on its config alone (`predates_fingerprints`).
"""

import hashlib
import json
import os
from importlib import metadata
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

from allennlp_tune.rundir import PLACEMENT_KEYS, SEED_KEYS

FINGERPRINT_KEY = "fingerprint"
# The packages whose version changes what a run computes (numerics, tokenization, adapters).
RESULT_PACKAGES = ("allennlp-tune", "allennlp", "torch", "transformers", "tokenizers", "peft")
# Config keys whose value says where a run trained, not what it learned.
IGNORED_KEYS = SEED_KEYS + PLACEMENT_KEYS
# Keys whose string value names a model on the Hugging Face hub when it is no local path.
HUB_NAME_KEYS = ("model_name",)
_CHUNK = 1 << 20

# path -> (size, mtime_ns, digest): a file is read once per process however many runs name it.
_DIGESTS: Dict[str, Tuple[int, int, str]] = {}


def _file_digest(path: str) -> str:
    stat = os.stat(path)
    known = _DIGESTS.get(path)
    if known is not None and known[:2] == (stat.st_size, stat.st_mtime_ns):
        return known[2]
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    _DIGESTS[path] = (stat.st_size, stat.st_mtime_ns, digest.hexdigest())
    return digest.hexdigest()


def content_digest(path: str) -> str:
    """
    `sha256:<hex>` of a file's bytes, or of a folder's files (their relative paths and digests,
    in order; names starting with `.` are left out, as a download tool's own metadata).
    """
    real = os.path.realpath(path)
    if os.path.isfile(real):
        return "sha256:" + _file_digest(real)
    digest = hashlib.sha256()
    for current, folders, files in os.walk(real):
        folders[:] = sorted(name for name in folders if not name.startswith("."))
        for name in sorted(files):
            if name.startswith("."):
                continue
            full = os.path.join(current, name)
            if os.path.isfile(full):
                relative = os.path.relpath(full, real)
                digest.update(f"{relative}\0{_file_digest(os.path.realpath(full))}\n".encode())
    return "sha256:" + digest.hexdigest()


def _hub_revision(name: str) -> Optional[str]:
    """The commit of the cached snapshot of a hub model (`None` when it is not cached)."""
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(name, "config.json")
    except Exception:  # an invalid repo id, an old huggingface_hub: nothing to record
        return None
    if not isinstance(found, str):
        return None
    return Path(found).parent.name


def _leaves(config: Any, prefix: str = "") -> List[Tuple[str, Any]]:
    """`[("trainer.optimizer.lr", 2e-05), ...]`: a config's values by dotted key."""
    if isinstance(config, dict) and config:
        pairs = []
        for key, value in config.items():
            pairs += _leaves(value, f"{prefix}.{key}" if prefix else str(key))
        return pairs
    if isinstance(config, list) and config:
        pairs = []
        for index, value in enumerate(config):
            pairs += _leaves(value, f"{prefix}.{index}")
        return pairs
    return [(prefix, config)]


def _ignored(key: str) -> bool:
    return any(key == ignored or key.startswith(ignored + ".") for ignored in IGNORED_KEYS)


def _is_local_path(value: Any) -> bool:
    return isinstance(value, str) and value != "" and "://" not in value and os.path.exists(value)


def package_versions() -> Dict[str, str]:
    """
    `{"torch": "2.3.1", ...}` for the installed `RESULT_PACKAGES`, without a local version label
    (`2.3.1+cpu` and `2.3.1+cu121` are one release built for two devices, and where a run
    trained is no difference).
    """
    versions = {}
    for name in RESULT_PACKAGES:
        try:
            versions[name] = metadata.version(name).partition("+")[0]
        except metadata.PackageNotFoundError:
            continue
    return versions


def fingerprint(config: Mapping[str, Any]) -> Dict[str, Any]:
    """
    What a run of `config` (rendered) is made of besides the config itself: `files` (each local
    path the config names -> its content digest), `hub` (each hub model name -> the revision of
    its cached snapshot, `null` when not cached) and `packages` (`package_versions`).
    """
    files: Dict[str, str] = {}
    hub: Dict[str, Optional[str]] = {}
    for key, value in _leaves(config):
        if _ignored(key) or not isinstance(value, str):
            continue
        if _is_local_path(value):
            files.setdefault(value, content_digest(value))
        elif key.rpartition(".")[2] in HUB_NAME_KEYS and value not in hub:
            hub[value] = _hub_revision(value)
    return {"files": files, "hub": hub, "packages": package_versions()}


def _comparable(config: Mapping[str, Any], files: Mapping[str, str]) -> Dict[str, str]:
    """The config's values by key, a recorded local path as its content digest."""
    flat = {}
    for key, value in _leaves(config):
        if _ignored(key):
            continue
        if isinstance(value, str) and value in files:
            flat[key] = f"file {os.path.basename(value.rstrip('/'))} {files[value]}"
        else:
            flat[key] = json.dumps(value, sort_keys=True)
    return flat


def _value_change(key: str, before: Optional[str], after: Optional[str]) -> str:
    if before and after and before.startswith("file ") and after.startswith("file "):
        name_before, _, digest_before = before[5:].rpartition(" ")
        name_after, _, digest_after = after[5:].rpartition(" ")
        if name_before == name_after:
            return f"{name_after} changed ({key}: {digest_before[:15]} -> {digest_after[:15]})"
    shown_before = "(absent)" if before is None else before
    shown_after = "(absent)" if after is None else after
    return f"{key} {shown_before} -> {shown_after}"


def config_differences(
    trained: Mapping[str, Any],
    trained_files: Mapping[str, str],
    now: Mapping[str, Any],
    now_files: Mapping[str, str],
) -> List[str]:
    """The keys whose value (a local path: whose content) differs, as `key old -> new`."""
    before = _comparable(trained, trained_files)
    after = _comparable(now, now_files)
    return [
        _value_change(key, before.get(key), after.get(key))
        for key in sorted(set(before) | set(after))
        if before.get(key) != after.get(key)
    ]


def _mapping_differences(
    what: str, before: Mapping[str, Any], after: Mapping[str, Any]
) -> List[str]:
    return [
        f"{what} {key} {before.get(key, '(absent)')} -> {after.get(key, '(absent)')}"
        for key in sorted(set(before) | set(after))
        if before.get(key) != after.get(key)
    ]


def _ext_var_differences(before: Mapping[str, str], after: Mapping[str, str]) -> List[str]:
    """`TUNE_LR (unset) -> 1e-3`: the ext vars given to the run and to the command now."""
    return [
        f"{key} {before.get(key) or '(unset)'} -> {after.get(key) or '(unset)'}"
        for key in sorted(set(before) | set(after))
        if (before.get(key) or "") != (after.get(key) or "")
    ]


def predates_fingerprints(info: Mapping[str, Any]) -> bool:
    """Whether a run's `tune_run.json` has no fingerprint (written before runs carried one)."""
    return not isinstance(info.get(FINGERPRINT_KEY), dict)


def differences(
    trained_config: Mapping[str, Any],
    info: Mapping[str, Any],
    now_config: Mapping[str, Any],
    now_fingerprint: Mapping[str, Any],
    now_ext_vars: Mapping[str, str],
) -> List[str]:
    """
    What differs between a finished run (its `config.json` and `tune_run.json`) and the run the
    command would train now; empty when the run can be reused. Changed ext vars are named first
    (they say why), but only a change of the config, of a file's content, of a hub revision or
    of a package version makes a difference: an ext var the config does not read changes
    nothing.
    """
    recorded = info.get(FINGERPRINT_KEY)
    recorded = recorded if isinstance(recorded, dict) else {}
    trained_files = recorded.get("files") if isinstance(recorded.get("files"), dict) else {}
    # Without a recorded fingerprint, paths compare as written (there is no old digest).
    now_files = now_fingerprint.get("files", {}) if recorded else {}
    found = config_differences(trained_config, trained_files, now_config, now_files)
    if recorded:
        for what in ("hub", "packages"):
            before = recorded.get(what) if isinstance(recorded.get(what), dict) else {}
            found += _mapping_differences(
                "hub model" if what == "hub" else "package", before, now_fingerprint.get(what, {})
            )
    if not found or not isinstance(info.get("ext_vars"), dict):
        return found
    return _ext_var_differences(info["ext_vars"], now_ext_vars) + found
