"""
`allennlp predict` and `allennlp evaluate` on a trained `tune_table` archive, as a user runs
them: bad input ends in an error naming the file and the line; a file that is not a model
archive says so; the `allennlp` command prints such errors in one line (the traceback on
request); and an archive keeps working after its training data has moved.
"""

import json
import os
import shutil
import subprocess
import sys
import tarfile
import traceback
from pathlib import Path
from typing import Callable, List

import pytest
from allennlp.commands import main as allennlp_main
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.models.archival import load_archive

import allennlp_tune  # noqa: F401
from allennlp_tune.data.paths import FIXTURE_MODELS_DIR, REPO_ROOT
from allennlp_tune_preimport import cli as preimport_cli

BERT = str(FIXTURE_MODELS_DIR / "bert-uncased")
ROWS = 'review,sentiment\na great film,pos\na dull mess,neg\n"funny, warm",pos\nbad,neg\n'


def transformer(**extra):  # a fresh dict each time: Params pops keys as it builds
    return {"type": "pretrained_transformer", "model_name": BERT, **extra}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A one-epoch `tune_table` run whose label set comes from `labels_file` (the train CSV)."""
    from allennlp.commands.train import train_model

    root = tmp_path_factory.mktemp("table")
    data = root / "data"
    data.mkdir()
    train = data / "train.csv"
    train.write_text(ROWS)
    params = {
        "dataset_reader": {
            "type": "tune_table",
            "kind": "classification",
            "header": True,
            "text": "review",
            "label": "sentiment",
            "labels_file": str(train),
            "tokenizer": transformer(),
            "token_indexers": {"tokens": transformer()},
        },
        "train_data_path": str(train),
        "validation_data_path": str(train),
        "model": {
            "type": "pooled_classifier",
            "text_field_embedder": {"token_embedders": {"tokens": transformer()}},
            "pooling": "cls",
        },
        "data_loader": {"batch_size": 4, "shuffle": False},
        "trainer": {"optimizer": {"type": "adam", "lr": 1e-3}, "num_epochs": 1},
    }
    train_model(Params(params), str(root / "run"))
    return root


def run(monkeypatch, *args: str) -> None:
    """`allennlp ARGS` in this process (the plugin is imported already)."""
    monkeypatch.setattr("allennlp.commands.import_plugins", lambda: None)
    monkeypatch.setattr(sys, "argv", ["allennlp", *args])
    allennlp_main()


def test_evaluate_and_predict_after_the_training_data_moved(trained, tmp_path, monkeypatch):
    train = trained / "data" / "train.csv"
    moved = trained / "moved"
    shutil.move(str(trained / "data"), moved)
    try:
        test = tmp_path / "test.csv"
        test.write_text("review,sentiment\na warm film,pos\na mess,neg\n")
        metrics = tmp_path / "metrics.json"
        archive = str(trained / "run" / "model.tar.gz")
        run(monkeypatch, "evaluate", archive, str(test), "--output-file", str(metrics))
        assert 0.0 <= json.loads(metrics.read_text())["accuracy"] <= 1.0
        # The archive's readers know the model's labels, without the training file.
        loaded = load_archive(archive)
        assert not train.exists()
        assert loaded.validation_dataset_reader.label_set() == {"pos", "neg"}
        # A label the model never saw is an error naming its line, not an indexing crash.
        test.write_text("review,sentiment\na warm film,pos\nso-so,meh\n")
        with pytest.raises(ConfigurationError, match=f"{test}, line 3: unknown label"):
            run(monkeypatch, "evaluate", archive, str(test))
    finally:
        shutil.move(str(moved), trained / "data")


@pytest.mark.parametrize(
    "content, expected",
    [
        (
            b'{"sentence": "good"}\n\n{"sentence": "caf\xe9"}\n',
            "{path}, line 3: bytes that are not valid UTF-8 (invalid continuation byte at byte "
            "17 of the line)",
        ),
        (
            b'{"sentence": "good"}\n' + b"[" * 100_000 + b"]" * 100_000 + b"\n",
            "input line 2 (blank lines not counted) holds arrays or objects nested deeper than "
            "Python's JSON parser can read",
        ),
    ],
    ids=["invalid UTF-8", "nested too deep"],
)
def test_predict_names_the_line_of_bad_input(trained, tmp_path, monkeypatch, content, expected):
    path = tmp_path / "input.jsonl"
    path.write_bytes(content)
    archive = str(trained / "run" / "model.tar.gz")
    out = tmp_path / "out.jsonl"
    with pytest.raises(ConfigurationError) as error:
        run(monkeypatch, "predict", archive, str(path), "--output-file", str(out), "--silent")
    assert str(error.value).startswith(expected.format(path=path)), error.value


def test_predict_a_missing_input_file(trained, tmp_path, monkeypatch):
    archive = str(trained / "run" / "model.tar.gz")
    missing = tmp_path / "missing.jsonl"
    out = str(tmp_path / "out.jsonl")
    with pytest.raises(ConfigurationError, match=f"The input file {missing} does not exist"):
        run(monkeypatch, "predict", archive, str(missing), "--silent", "--output-file", out)


def no_config_archive(path: Path) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        weights = path.parent / "weights.th"
        weights.write_bytes(b"not used")
        archive.add(weights, arcname="weights.th")
    return path


def test_an_archive_without_config_json(tmp_path, monkeypatch):
    archive = no_config_archive(tmp_path / "model.tar.gz")
    expected = f"{archive} has no config.json: not a model archive made by `allennlp train`"
    with pytest.raises(ConfigurationError, match=expected):
        load_archive(str(archive))
    with pytest.raises(ConfigurationError, match=expected):
        run(monkeypatch, "evaluate", str(archive), str(tmp_path / "test.csv"))


# ----------------------------------------------------------------------------------------------
# The `allennlp` command's short errors (allennlp_tune_preimport.cli, fix 11)
# ----------------------------------------------------------------------------------------------
class FakeMain:
    """`sys.modules["__main__"]` of `python -m allennlp`."""

    __spec__ = type("Spec", (), {"name": "allennlp.__main__"})()


@pytest.fixture
def cli(monkeypatch) -> Callable[[List[str]], None]:
    """`cli(argv)`: this process looks like the `allennlp` command with that command line."""

    def make(argv: List[str]) -> None:
        monkeypatch.setitem(sys.modules, "__main__", FakeMain())
        monkeypatch.setattr(sys, "argv", argv)
        monkeypatch.setattr(sys, "excepthook", sys.excepthook)
        monkeypatch.setitem(preimport_cli._cli, "verbose", False)
        monkeypatch.delenv("ALLENNLP_TUNE_VERBOSE", raising=False)

    return make


def raised(error: BaseException):
    try:
        raise error
    except BaseException as caught:
        return type(caught), caught, caught.__traceback__


def test_importing_the_plugin_from_python_leaves_the_excepthook_alone():
    assert not preimport_cli.running_allennlp_cli()
    assert not getattr(sys.excepthook, "_allennlp_tune_cli", False)
    assert not preimport_cli.install_cli_excepthook()


def test_a_clear_error_is_one_line_and_status_2(cli, capsys, monkeypatch):
    cli(["allennlp", "predict", "model.tar.gz", "in.jsonl"])
    previous = []
    monkeypatch.setattr(sys, "excepthook", lambda *exc_info: previous.append(exc_info))
    assert preimport_cli.install_cli_excepthook()
    with pytest.raises(SystemExit) as status:
        sys.excepthook(*raised(ConfigurationError("input line 2: missing keys.")))
    assert status.value.code == 2 and previous == []
    assert capsys.readouterr().err == "allennlp predict: input line 2: missing keys.\n"
    # Any other exception keeps its traceback (the previous hook) and status.
    other = raised(ValueError("a bug"))
    sys.excepthook(*other)
    assert previous == [other]


@pytest.mark.parametrize("how", ["-v", "--verbose", "env"])
def test_verbose_shows_the_traceback_too(cli, capsys, monkeypatch, how):
    cli(["allennlp", "evaluate", "m.tar.gz", "t.csv"] + ([how] if how != "env" else []))
    if how == "env":
        monkeypatch.setenv("ALLENNLP_TUNE_VERBOSE", "1")
    monkeypatch.setattr(sys, "excepthook", lambda *exc_info: traceback.print_exception(*exc_info))
    preimport_cli.install_cli_excepthook()
    assert sys.argv == ["allennlp", "evaluate", "m.tar.gz", "t.csv"]  # AllenNLP refuses -v
    with pytest.raises(SystemExit) as status:
        sys.excepthook(*raised(ConfigurationError("no config.json")))
    err = capsys.readouterr().err
    assert status.value.code == 2
    assert err.startswith("Traceback") and err.endswith("\nallennlp evaluate: no config.json\n")


def test_the_allennlp_command_with_v(tmp_path):
    """The console script a user runs: -v is taken off before AllenNLP parses the command line.
    (Without -v, through `python -m allennlp`: tests/commands/test_archive_safety.py.)"""
    command = Path(sys.executable).parent / "allennlp"
    if not command.is_file():
        pytest.skip(f"no allennlp console script beside {sys.executable}")
    archive = no_config_archive(tmp_path / "model.tar.gz")
    args = ["evaluate", str(archive), "test.csv", "-v", "--include-package", "allennlp_tune"]
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(REPO_ROOT))
    env.pop("ALLENNLP_TUNE_VERBOSE", None)
    result = subprocess.run(
        [str(command), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 2, result.stderr
    assert "Traceback (most recent call last)" in result.stderr
    assert result.stderr.rstrip().splitlines()[-1] == (
        f"allennlp evaluate: {archive} has no config.json: not a model archive made by "
        "`allennlp train`. Give the model.tar.gz that `allennlp train` writes in its "
        "serialization directory (or that directory itself)."
    )
