"""
The digests of a finished run's outputs: a run proves that the files the report reads are the
ones it wrote when it finished.

When a run finishes (tune-grid, tune-compare, tune-search: `experiments.outputs`), its
`tune_run.json` gets `outputs`, for each file of `DIGESTED_NAMES` that exists then, its size and
sha256 (the archive's with its mtime too); `tune-test` (`experiments.test_split`) records
`test_predictions.jsonl` and the `metrics.json` it rewrote the same way:

    "outputs": {
      "metrics.json": {"bytes": 412, "sha256": "9f2c..."},
      "dev_predictions.jsonl": {"bytes": 40213, "sha256": "03ab..."},
      "model.tar.gz": {"bytes": 1862311, "sha256": "77e0...", "mtime_ns": 1764633600123456789}
    }

`digest_problems` checks them, cheapest first: the size (a stat), then the sha256 of each small
file (metrics and predictions, a few MB at most). The archive (hundreds of MB for a BERT) is
hashed only when its size is the recorded one but its mtime is not, so that neither a report nor
a complete grid's rerun reads every archive: an archive cut short or swapped has another size,
one rewritten in place another mtime; only an edit that keeps both (`touch -r`) goes unseen.
An archive deleted to free disk is no problem (the grid keeps such a run: delete its folder to
train it again); any other recorded file that is missing is, and so is a digested file that the
record does not name (written into the folder after the run finished).

A run recorded before digests (no `outputs`) has nothing to check here: `digest_problems` returns
`None` ("unverified"), and the run is still read; its score is still checked against its
predictions (`reporting.verify`).
"""

import hashlib
import os
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence

from allennlp_tune.rundir.jsonio import describe_value
from allennlp_tune.rundir.names import (
    ARCHIVE_NAME,
    METRICS_NAME,
    PREDICTIONS_NAME,
    RUN_INFO_NAME,
    TEST_PREDICTIONS_NAME,
)

# The key of `tune_run.json` that holds the digests.
OUTPUTS_KEY = "outputs"
# The outputs the report reads, digested when a run finishes (those that exist).
DIGESTED_NAMES = (METRICS_NAME, PREDICTIONS_NAME, TEST_PREDICTIONS_NAME, ARCHIVE_NAME)
# Hashed only when the size is right and the mtime is not the recorded one (module docstring).
LAZY_NAMES = (ARCHIVE_NAME,)
_CHUNK = 1 << 20


def sha256_of(path: Path) -> str:
    """The sha256 of a file's bytes, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def file_digest(path: Path) -> Dict[str, Any]:
    """`{"bytes": size, "sha256": hex}` of a file, with `mtime_ns` for an archive."""
    stat = os.stat(path)
    digest: Dict[str, Any] = {"bytes": stat.st_size, "sha256": sha256_of(path)}
    if Path(path).name in LAZY_NAMES:
        digest["mtime_ns"] = stat.st_mtime_ns
    return digest


def record_digests(
    run_dir: Path, names: Sequence[str] = DIGESTED_NAMES
) -> Dict[str, Dict[str, Any]]:
    """The digests of the files of `names` that exist in `run_dir` (what `outputs` holds)."""
    run_dir = Path(run_dir)
    return {name: file_digest(run_dir / name) for name in names if (run_dir / name).is_file()}


def _entry_problem(name: str, entry: Any) -> Optional[str]:
    """What is wrong with the shape of one recorded digest, if anything."""
    if not isinstance(entry, dict):
        return f"{RUN_INFO_NAME}: outputs.{name} is {describe_value(entry)}, expected an object"
    size, digest = entry.get("bytes"), entry.get("sha256")
    if isinstance(size, bool) or not isinstance(size, int) or not isinstance(digest, str):
        return f"{RUN_INFO_NAME}: outputs.{name} has no integer bytes and string sha256"
    return None


def _file_problem(run_dir: Path, name: str, entry: Mapping[str, Any]) -> Optional[str]:
    """What differs between a recorded digest and the file as it is now, if anything."""
    path = run_dir / name
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        if name == ARCHIVE_NAME:
            return None  # deleted to free disk: the run keeps its scores
        return f"{name}: missing, but {RUN_INFO_NAME} recorded it when the run finished"
    except OSError as error:
        return f"{name}: cannot be read ({error.__class__.__name__}: {error})"
    if stat.st_size != entry["bytes"]:
        return (
            f"{name}: {stat.st_size} bytes, {RUN_INFO_NAME}'s record says {entry['bytes']} "
            "(cut short, or changed since the run finished)"
        )
    if name in LAZY_NAMES and stat.st_mtime_ns == entry.get("mtime_ns"):
        return None
    try:
        digest = sha256_of(path)
    except OSError as error:
        return f"{name}: cannot be read ({error.__class__.__name__}: {error})"
    if digest != entry["sha256"]:
        return f"{name}: sha256 differs from {RUN_INFO_NAME}'s record (changed since it finished)"
    return None


def digest_problems(run_dir: Path, info: Mapping[str, Any]) -> Optional[List[str]]:
    """
    What differs between the run's files and the digests its `tune_run.json` recorded (module
    docstring): `[]` when nothing does, `None` when the run has no record of digests (a run
    recorded before them), else one `"<file>: <what>"` per problem.
    """
    recorded = info.get(OUTPUTS_KEY)
    if recorded is None:
        return None
    if not isinstance(recorded, dict):
        return [f"{RUN_INFO_NAME}: outputs is {describe_value(recorded)}, expected an object"]
    run_dir = Path(run_dir)
    problems = []
    for name, entry in recorded.items():
        problem = _entry_problem(name, entry) or _file_problem(run_dir, name, entry)
        if problem is not None:
            problems.append(problem)
    for name in DIGESTED_NAMES:
        if name not in recorded and name != ARCHIVE_NAME and (run_dir / name).is_file():
            problems.append(
                f"{name}: not in {RUN_INFO_NAME}'s record (written after the run finished)"
            )
    return problems
