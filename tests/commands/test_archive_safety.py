"""
Loading a model archive never writes outside its temporary folder, never runs pickled code, and
refuses what is not a model archive with a clear error: through AllenNLP's `load_archive` (what
`allennlp evaluate` / `predict` use), the probe/mi `--archive` path, and the CLI itself.
"""

import copy
import inspect
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import Callable, Dict, List, Optional, Set, Tuple

import pytest
import torch
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.models import Model
from allennlp.models.archival import load_archive

import allennlp_tune  # noqa: F401  (applies allennlp_tune.compat)
from allennlp_tune.analysis.features import load_archived_encoder
from allennlp_tune.data.paths import REPO_ROOT

MODEL_CONFIG = {
    "type": "basic_classifier",
    "text_field_embedder": {
        "token_embedders": {"tokens": {"type": "embedding", "embedding_dim": 4}}
    },
    "seq2vec_encoder": {"type": "boe", "embedding_dim": 4},
}
CONFIG = {
    "dataset_reader": {"type": "text_classification_json", "tokenizer": {"type": "whitespace"}},
    "model": MODEL_CONFIG,
    "train_data_path": "unused",
    "data_loader": {"batch_size": 2},
}


def add(archive: tarfile.TarFile, name: str, data: bytes = b"", **fields) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    for field, value in fields.items():
        setattr(info, field, value)
    archive.addfile(info, io.BytesIO(data) if info.isfile() else None)


def tiny_archive(path: Path, weights: Optional[bytes] = None) -> Path:
    """A real (untrained) basic_classifier archive, laid out as `allennlp train` writes it."""
    run = path.parent / f"{path.name}.run"
    vocab = Vocabulary(tokens_to_add={"tokens": ["good", "bad"], "labels": ["pos", "neg"]})
    vocab.save_to_files(str(run / "vocabulary"))
    (run / "config.json").write_text(json.dumps(CONFIG))
    if weights is None:
        model = Model.from_params(vocab=vocab, params=Params(copy.deepcopy(MODEL_CONFIG)))
        torch.save(model.state_dict(), run / "weights.th")
    else:
        (run / "weights.th").write_bytes(weights)
    with tarfile.open(path, "w:gz") as archive:
        for name in ("config.json", "weights.th", "vocabulary"):
            archive.add(run / name, arcname=name)
    return path


def traversal(archive: tarfile.TarFile, outside: Path) -> Tuple[str, str]:
    add(archive, "config.json", b"{}")
    add(archive, "../../escaped.txt", b"pwned")  # two levels up from <tmp>/<extraction dir>
    return "../../escaped.txt", "'..' component"


def absolute(archive: tarfile.TarFile, outside: Path) -> Tuple[str, str]:
    name = str(outside / "absolute.txt")
    add(archive, name, b"pwned")
    return name, "absolute path"


def symlink_write_through(archive: tarfile.TarFile, outside: Path) -> Tuple[str, str]:
    add(archive, "vocabulary", type=tarfile.SYMTYPE, linkname=str(outside))
    add(archive, "vocabulary/through_link.txt", b"pwned")
    return "vocabulary", "symbolic link"


def hardlink_outside(archive: tarfile.TarFile, outside: Path) -> Tuple[str, str]:
    add(archive, "weights.th", type=tarfile.LNKTYPE, linkname=str(outside / "victim.txt"))
    add(archive, "weights.th", b"overwritten through the hard link")
    return "weights.th", "hard link"


CRAFTED = [traversal, absolute, symlink_write_through, hardlink_outside]


def all_files(root: Path) -> Dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in root.rglob("*")
        if path.is_file() or path.is_symlink()
    }


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """
    `sandbox(craft)` writes a crafted archive and returns `(archive, member, reason, check)`;
    `check()` asserts that nothing under `tmp_path` changed but the archive, and that no
    extraction folder was left in the (private) temporary folder.
    """
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("original")

    def make(craft: Callable) -> Tuple[Path, str, str, Callable[[], None]]:
        path = tmp_path / "model.tar.gz"
        with tarfile.open(path, "w:gz") as archive:
            member, reason = craft(archive, outside)
        before = all_files(tmp_path)

        def check() -> None:
            assert all_files(tmp_path) == before
            assert (outside / "victim.txt").read_text() == "original"
            assert list(temporary.iterdir()) == []

        return path, member, reason, check

    return make


@pytest.mark.parametrize("craft", CRAFTED)
def test_load_archive_refuses_members_that_escape(sandbox, craft):
    archive, member, reason, check = sandbox(craft)
    with pytest.raises(Exception) as error:
        load_archive(str(archive))
    check()  # first: without the guard, the archive is extracted and loading fails later
    assert error.type is ConfigurationError, error.value
    message = str(error.value)
    assert str(archive) in message and repr(member) in message and reason in message


@pytest.mark.parametrize("craft", CRAFTED)
def test_the_probe_and_mi_archive_path_refuses_members_that_escape(sandbox, craft):
    archive, member, reason, check = sandbox(craft)
    with pytest.raises(Exception) as error:
        load_archived_encoder(str(archive))
    check()
    assert error.type is ConfigurationError, error.value
    assert str(archive) in str(error.value) and repr(member) in str(error.value)


def test_allennlp_evaluate_and_probe_refuse_it_in_process(sandbox, run_allennlp, task_files):
    archive, member, _, check = sandbox(symlink_write_through)
    data = Path(task_files("sst2")[1])
    with pytest.raises(ConfigurationError, match=repr(member)):
        run_allennlp("evaluate", str(archive), str(data))
    check()
    train, dev = task_files("sst2")
    args = ["probe", "--reader", "sst2", "--train-file", train, "--dev-file", dev]
    output = archive.parent / "probe_out"
    with pytest.raises(ConfigurationError, match=repr(member)):
        run_allennlp(*args, "--archive", str(archive), "--output-dir", str(output))
    # --output-dir may be created before the archive is read; nothing else may appear.
    assert not output.exists() or not any(output.rglob("*"))
    if output.exists():
        output.rmdir()
    check()


def test_allennlp_evaluate_on_the_command_line_refuses_it(sandbox, tmp_path):
    """The `allennlp` a user runs (plugin found through `.allennlp_plugins`) has the guard."""
    archive, member, _, check = sandbox(traversal)
    work = tmp_path / "work"
    work.mkdir()
    (work / ".allennlp_plugins").write_text("allennlp_tune\n")
    (work / "data.jsonl").write_text('{"text": "good", "label": "pos"}\n')
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(REPO_ROOT))
    env["TMPDIR"] = str(tmp_path / "tmp")
    # `allennlp evaluate` imports every AllenNLP module, torchvision and torch._dynamo with
    # them, which makes torch's compile cache folder in TMPDIR unless TORCHINDUCTOR_CACHE_DIR
    # is set (torch sets it in os.environ the first time, so whether this process had imported
    # torch._dynamo before decided where the child put it). Torch's cache is not what the
    # check is about: it goes outside the sandbox.
    env["TORCHINDUCTOR_CACHE_DIR"] = str(tmp_path.parent / "torchinductor")
    result = subprocess.run(
        [sys.executable, "-m", "allennlp", "evaluate", str(archive), "data.jsonl"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    for path in (work / ".allennlp_plugins", work / "data.jsonl"):
        path.unlink()
    work.rmdir()
    check()
    # A clear error ends the command in one line, without a traceback (compat.py, fix 11).
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"allennlp evaluate: Refusing to extract the model archive {archive}")
    assert repr(member) in last


def test_a_well_formed_archive_still_loads_and_evaluates(tmp_path, run_allennlp, monkeypatch):
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    archive = tiny_archive(tmp_path / "model.tar.gz")
    loaded = load_archive(str(archive))
    assert loaded.model.vocab.get_token_index("bad") == 3  # after padding and OOV
    data = tmp_path / "data.jsonl"
    data.write_text('{"text": "good", "label": "pos"}\n{"text": "bad", "label": "neg"}\n')
    metrics = tmp_path / "metrics.json"
    run_allennlp("evaluate", str(archive), str(data), "--output-file", str(metrics))
    assert 0.0 <= json.loads(metrics.read_text())["accuracy"] <= 1.0
    assert list(temporary.iterdir()) == []


def not_an_archive(path: Path) -> Path:
    path.write_text("just some text, not a model archive\n")
    return path


def zip_archive(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("config.json", "{}")
    return path


def uncompressed_tar(path: Path) -> Path:
    with tarfile.open(path, "w") as archive:
        add(archive, "config.json", b"{}")
    return path


def truncated_gzip(path: Path) -> Path:
    tiny_archive(path)
    path.write_bytes(path.read_bytes()[:200])
    return path


@pytest.mark.parametrize(
    "make",
    [not_an_archive, zip_archive, uncompressed_tar, truncated_gzip],
    ids=lambda f: f.__name__,
)
def test_a_file_that_is_not_a_model_archive_is_a_clear_error(tmp_path, make, run_allennlp):
    path = make(tmp_path / "model.tar.gz")
    for load in (load_archive, load_archived_encoder):
        with pytest.raises(ConfigurationError) as error:
            load(str(path))
        message = str(error.value)
        assert str(path) in message and "Expected a gzip-compressed tar file" in message
    with pytest.raises(ConfigurationError, match="Expected a gzip-compressed tar file"):
        run_allennlp("evaluate", str(path), str(path))


class RunsCode:
    """A pickle payload: unpickling it creates the folder `marker`."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return os.mkdir, (self.marker,)


def older_torch_load(monkeypatch) -> List[Set[str]]:
    """`torch.load` as in torch < 2.6, where `weights_only` defaults to False; records kwargs."""
    real_load = torch.load
    calls: List[Set[str]] = []

    def load(*args, weights_only=False, **kwargs):
        calls.append({"weights_only"} if weights_only else set())
        return real_load(*args, weights_only=weights_only, **kwargs)

    monkeypatch.setattr(torch, "load", load)
    return calls


# torch < 1.13 (1.12 in a stock AllenNLP 2.10.1 environment) has no safe loading mode at all:
# there an archive's weights are unpickled as they are (README, "Pickle safety").
needs_weights_only = pytest.mark.skipif(
    "weights_only" not in inspect.signature(torch.load).parameters,
    reason=f"torch {torch.__version__}'s torch.load has no weights_only (torch >= 1.13): "
    "nothing to pass, pickled code in a weights file cannot be refused on this torch",
)


@needs_weights_only
@pytest.mark.parametrize("older_torch", [False, True])
def test_a_weights_file_with_pickled_code_never_runs_it(tmp_path, monkeypatch, older_torch):
    marker = tmp_path / "payload_ran"
    buffer = io.BytesIO()
    torch.save({"weight": RunsCode(marker)}, buffer)
    archive = tiny_archive(tmp_path / "model.tar.gz", weights=buffer.getvalue())
    if older_torch:
        calls = older_torch_load(monkeypatch)
    for load in (load_archive, load_archived_encoder):
        with pytest.raises(Exception) as error:
            load(str(archive))
        assert not marker.exists()
        assert error.type is ConfigurationError, error.value
        assert "Refusing to load the weights file" in str(error.value)
    if older_torch:
        assert calls == [{"weights_only"}, {"weights_only"}]


@needs_weights_only
@pytest.mark.parametrize(
    "weights, starts",
    [
        (b"these are plain bytes, not weights\n", "starts with b'these ar', neither torch's zip"),
        (b"x" * 64, "starts with b'xxxxxxxx', neither torch's zip format nor a pickle"),
        (b"", "is empty"),
    ],
)
def test_a_weights_file_of_plain_bytes_is_called_what_it_is(tmp_path, weights, starts):
    """Not "pickled objects", and no hint to load it with `weights_only=False`."""
    archive = tiny_archive(tmp_path / "model.tar.gz", weights=weights)
    for load in (load_archive, load_archived_encoder):
        with pytest.raises(ConfigurationError) as error:
            load(str(archive))
        message = str(error.value)
        # The archive the user named, not the temporary folder it was extracted to.
        assert message.startswith(f"The weights file weights.th in the archive {archive} is not")
        assert "/tmp" not in message.replace(str(tmp_path), "")
        assert f"file: it {starts}" in message and "use the run's own model.tar.gz" in message
        assert "pickled" not in message and "weights_only" not in message
        assert "\n" not in message


@needs_weights_only
def test_the_pickled_code_refusal_names_the_global_without_torch_s_hint(tmp_path):
    buffer = io.BytesIO()
    torch.save({"weight": RunsCode(tmp_path / "payload_ran")}, buffer)
    archive = tiny_archive(tmp_path / "model.tar.gz", weights=buffer.getvalue())
    with pytest.raises(ConfigurationError) as error:
        load_archive(str(archive))
    message = str(error.value)
    assert message.startswith(
        f"Refusing to load the weights file weights.th in the archive {archive}:"
    )
    assert "it holds pickled objects other than tensors, which could run code (" in message
    assert "GLOBAL" in message and "mkdir" in message  # what the pickle would have called
    assert "weights_only" not in message and "\n" not in message


@needs_weights_only
def test_read_state_dict_keeps_its_behaviour_and_loads_weights_only(tmp_path, monkeypatch):
    from allennlp.modules.transformer import transformer_module
    from allennlp.nn import util as nn_util

    path = tmp_path / "weights.th"
    torch.save({"model.a": torch.ones(2), "model.b": torch.zeros(1)}, path)
    calls = older_torch_load(monkeypatch)
    state = nn_util.read_state_dict(str(path), strip_prefix="model.", ignore=["model.b"])
    assert list(state) == ["a"] and torch.equal(state["a"], torch.ones(2))
    assert calls == [{"weights_only"}]
    # Also where AllenNLP imported the function by name before the plugin was imported.
    assert transformer_module.read_state_dict is nn_util.read_state_dict


def test_cached_path_extraction_refuses_members_that_escape(tmp_path):
    from allennlp.common.file_utils import cached_path

    archive = tmp_path / "data.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        add(tar, "train.tsv", b"a\tb\n")
        # Passes cached_path's own check (a common *string* prefix with its test folder).
        add(tar, "../pathtest-escaped/x.txt", b"pwned")
    cache = tmp_path / "cache"
    try:
        cached_path(str(archive), cache_dir=str(cache), extract_archive=True)
        error = None
    except Exception as raised:
        error = raised
    assert not list(cache.rglob("x.txt"))  # without the check: cache/pathtest-escaped/x.txt
    assert isinstance(error, ConfigurationError), error
    assert str(archive) in str(error) and "'../pathtest-escaped/x.txt'" in str(error)
