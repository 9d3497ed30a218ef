"""
Task files: a task is a Jsonnet object (`allennlp_tune/configs/tasks/<name>.jsonnet` for the
shipped ones; schema in `allennlp_tune/configs/experiment.libsonnet`), and `cell()` takes one as
well as a task name. Every cell of `training_config/` renders the same when its task is passed
as the shipped task file instead of by name; a task object of one's own renders to the config
its fields say, and a task object that cannot work is refused with a message naming the field.
"""

import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any, Dict

import pytest
from allennlp.common import Params

import allennlp_tune  # noqa: F401  (registers the components, sets the ext var defaults)
from allennlp_tune.config_vars import CONFIG_VARS
from allennlp_tune.data.paths import REPO_ROOT

LIBRARY = REPO_ROOT / "allennlp_tune" / "configs"
TASK_FILES = sorted((LIBRARY / "tasks").glob("*.jsonnet"))
CELLS = sorted((REPO_ROOT / "training_config").glob("*.jsonnet"))
EXT_VARS = {name: "" for name in CONFIG_VARS} | {
    "TUNE_DATA_DIR": "DATA",
    "TUNE_BERT_MODEL": "BERT",
    "TUNE_ELMO_OPTIONS": "ELMO_OPTIONS",
    "TUNE_ELMO_WEIGHTS": "ELMO_WEIGHTS",
}
CELL_CALL = re.compile(r'\(import "[^"]*experiment\.libsonnet"\)\.cell\("(?P<task>\w+)",')


def render(path: Path) -> Dict[str, Any]:
    return Params.from_file(str(path), ext_vars=EXT_VARS).as_dict(quiet=True)


def render_text(tmp_path: Path, text: str) -> Dict[str, Any]:
    path = tmp_path / "wrapper.jsonnet"
    path.write_text(text, encoding="utf-8")
    return render(path)


def test_the_shipped_tasks_are_the_task_files():
    names = [path.stem for path in TASK_FILES]
    assert names == sorted(
        ["conll2003", "sst2", "mnli", "sick_e", "sick_r", "mrpc", "sts_b", "cola"]
    )
    listed = json.loads(
        json.dumps(Params.from_file(str(LIBRARY / "tasks.libsonnet"), ext_vars=EXT_VARS).as_dict())
    )
    for path in TASK_FILES:
        task = render(path)
        assert task["name"] == path.stem
        assert listed[path.stem] == task


@pytest.mark.parametrize("cell", CELLS, ids=[cell.stem for cell in CELLS])
def test_a_cell_renders_the_same_with_its_task_file(cell: Path, tmp_path):
    text = cell.read_text(encoding="utf-8")
    call = CELL_CALL.search(text)
    assert call is not None, f"{cell.name} does not call cell() with a task name"
    task_file = LIBRARY / "tasks" / f"{call['task']}.jsonnet"
    wrapper = CELL_CALL.sub(
        f'(import "{LIBRARY / "experiment.libsonnet"}").cell(import "{task_file}",', text
    )
    assert wrapper != text
    assert render_text(tmp_path, wrapper) == render(cell)


def own_task(**fields: Any) -> str:
    task = {
        "name": "reviews",
        "kind": "classification",
        "reader": {"type": "tune_table", "header": True, "text": "review", "label": "stars",
                   "labels": ["bad", "good"]},
        "train": "/data/train.csv",
        "validation": "/data/dev.csv",
        "metric": "+accuracy",
        "num_labels": 2,
    }  # fmt: skip
    task.update(fields)
    return json.dumps({key: value for key, value in task.items() if value is not None})


def cell_of(task_json: str, encoder: str = "bert", mode: str = "fe") -> str:
    return f'(import "{LIBRARY / "experiment.libsonnet"}").cell({task_json}, "{encoder}", "{mode}")'


def test_an_own_task_object_renders_its_fields(tmp_path):
    config = render_text(tmp_path, cell_of(own_task(test="/data/test.csv")))
    reader = config["dataset_reader"]
    assert reader["type"] == "tune_table" and reader["kind"] == "classification"
    assert reader["tokenizer"]["model_name"] == "BERT"
    assert config["train_data_path"] == "/data/train.csv"
    assert config["validation_data_path"] == "/data/dev.csv"
    # the test file is recorded, and not read for the vocabulary
    assert config["test_data_path"] == "/data/test.csv"
    assert config["datasets_for_vocab_creation"] == ["train", "validation"]
    assert config["model"]["type"] == "tune_bcn"
    assert config["model"]["output_layer"]["output_dims"][-1] == 2
    assert config["trainer"]["validation_metric"] == "+accuracy"

    pair = render_text(
        tmp_path, cell_of(own_task(kind="pair_regression", num_labels=None), mode="ft")
    )
    assert pair["dataset_reader"]["kind"] == "pair_regression"
    assert pair["dataset_reader"]["pair_encoding"] == "joint"
    assert pair["model"]["type"] == "pooled_classifier" and pair["model"]["regression"] is True
    esim = render_text(tmp_path, cell_of(own_task(kind="pair_regression"), encoder="elmo"))
    assert esim["model"]["type"] == "esim_regression"
    assert "test_data_path" not in esim


@pytest.mark.parametrize(
    "fields, mode, message",
    [
        (
            {"kind": "ranking"},
            "fe",
            "task reviews: kind must be classification, pair_classification",
        ),
        ({"num_labels": None}, "ft", "task reviews (kind classification) lacks num_labels"),
        ({"metric": None, "train": None}, "ft", "task reviews lacks train, metric"),
        ({"kind": "regression"}, "fe", "kind regression has no paper feature-extraction network"),
        (
            {"reader": {"type": "tune_table", "kind": "pair_classification"}},
            "fe",
            "reader.kind pair_classification differs from the task's kind classification",
        ),
    ],
)
def test_an_unusable_task_object_is_refused_naming_the_field(fields, mode, message, tmp_path):
    with pytest.raises(RuntimeError, match=re.escape(message)):
        render_text(tmp_path, cell_of(own_task(**fields), mode=mode))


def test_an_unknown_task_name_lists_the_shipped_ones(tmp_path):
    with pytest.raises(RuntimeError, match="unknown task sick; a shipped task \\(cola, conll2003"):
        render_text(tmp_path, cell_of('"sick"'))


def test_a_wheel_ships_the_library_and_the_task_files(tmp_path):
    """A non-editable install has every file of allennlp_tune/configs (setup.py package_data)."""
    source = tmp_path / "source"
    shutil.copytree(
        REPO_ROOT / "allennlp_tune",
        source / "allennlp_tune",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    for name in ("setup.py", "README.md", "pyproject.toml"):
        shutil.copy(REPO_ROOT / name, source / name)
    command = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    subprocess.run([*command, str(source), "-w", str(tmp_path / "wheel")], check=True, cwd=source)
    (wheel,) = (tmp_path / "wheel").glob("*.whl")
    shipped = {name for name in zipfile.ZipFile(wheel).namelist() if "/configs/" in name}
    library = {
        path.relative_to(REPO_ROOT).as_posix()
        for path in LIBRARY.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    assert len(library) == 14 and shipped == library
