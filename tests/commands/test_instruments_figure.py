"""
The instruments figure (issue 17): `plot_instruments` and scripts/instruments_figure.py on the
probe.json and mi.json that `allennlp probe` and `allennlp mi` write for fixture models (the
fixture BERT, its fine-tuned SST-2 archive and the command runners come from
tests/commands/conftest.py).
"""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

import allennlp_tune  # noqa: F401  (registers the readers)
from allennlp_tune.analysis.plots import plot_instruments
from allennlp_tune.data.paths import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "instruments_figure.py"
LAYERS = "0,2,-1"  # fixture BERT: embeddings and 4 layers


@pytest.fixture(scope="module")
def probe_json(run_allennlp, probe_args):
    """`probe_json(out, task, *models, flags=())` runs `allennlp probe`; returns its probe.json."""

    def run(out: Path, task: str, *models: str, flags=()) -> Path:
        run_allennlp(*probe_args(task, out, *models, "--layers", LAYERS, *flags))
        return out / "probe.json"

    return run


@pytest.fixture(scope="module")
def mi_json(run_allennlp, mi_args):
    """`mi_json(out, task, *models, estimator=...)` runs `allennlp mi`; returns its mi.json."""

    def run(out: Path, task: str, *models: str, estimator: str) -> Path:
        run_allennlp(*mi_args(task, out, *models, "--layers", LAYERS, "--estimator", estimator))
        return out / "mi.json"

    return run


@pytest.fixture(scope="module")
def sst2_outputs(tmp_path_factory, tiny_bert, sst2_archive, probe_json, mi_json):
    """probe.json with --control --mdl and both mi.json (edge, edge_projected), both models."""
    models = ("--model-name", tiny_bert, "--archive", str(sst2_archive))
    out = tmp_path_factory.mktemp("sst2")
    return {
        "probe": probe_json(out / "probe", "sst2", *models, flags=("--control", "--mdl")),
        "edge": mi_json(out / "edge", "sst2", *models, estimator="edge"),
        "edge_projected": mi_json(out / "projected", "sst2", *models, estimator="edge_projected"),
    }


@pytest.fixture(scope="module")
def plain_probe(tmp_path_factory, tiny_bert, probe_json) -> Path:
    """probe.json of the pretrained model only, without --control or --mdl."""
    return probe_json(tmp_path_factory.mktemp("plain"), "sst2", "--model-name", tiny_bert)


@pytest.fixture(scope="module")
def sts_b_probe(tmp_path_factory, tiny_bert, probe_json) -> Path:
    """probe.json of a regression task with --control --mdl: its mdl entries are None."""
    out = tmp_path_factory.mktemp("sts_b")
    return probe_json(out, "sts_b", "--model-name", tiny_bert, flags=("--control", "--mdl"))


def read(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.fixture
def check_figure(check_png):
    """`check_figure(path)`: a PNG with the three panels in a row."""

    def check(path: Path) -> None:
        assert check_png(path).shape[1] > 1000

    return check


def assert_series(series: dict, layers, values) -> None:
    assert series["layers"] == layers
    assert len(series["values"]) == len(values)
    for drawn, expected in zip(series["values"], values):
        assert (drawn is None) == (expected is None)
        if expected is not None:
            assert drawn == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_every_instrument_is_plotted_with_the_json_values(sst2_outputs, tmp_path, check_figure):
    probe = read(sst2_outputs["probe"])
    mis = [read(sst2_outputs["edge"]), read(sst2_outputs["edge_projected"])]
    assert [mi["estimator"]["estimator"] for mi in mis] == ["edge", "edge_projected"]
    png = tmp_path / "figure.png"
    drawn = plot_instruments(probe, mis, str(png), title="SST-2, fixture BERT")
    check_figure(png)
    assert drawn["title"] == "SST-2, fixture BERT"
    mi_panel, probe_panel, mdl_panel = (drawn["panels"][name] for name in ("mi", "probe", "mdl"))
    kinds = ("pretrained", "fine_tuned")
    assert set(probe["models"]) == set(kinds)

    expected_mi_keys = set()
    for mi in mis:
        name = mi["estimator"]["estimator"]
        for kind in kinds:
            model = mi["models"][kind]
            for key in ("mi", "random_label_mi", "bound"):
                series = mi_panel["series"][f"{kind}/{name}/{key}"]
                assert_series(series, model["layers"], model[key])
                assert name in series["label"]
                expected_mi_keys.add(f"{kind}/{name}/{key}")
            assert "random labels" in mi_panel["series"][f"{kind}/{name}/random_label_mi"]["label"]
    for kind in kinds:
        model = probe["models"][kind]
        assert model["layers"] == [0, 2, 4]
        assert_series(mi_panel["series"][f"{kind}/probe/bound"], model["layers"], model["bound"])
        assert "H(Y) - CE" in mi_panel["series"][f"{kind}/probe/bound"]["label"]
        expected_mi_keys.add(f"{kind}/probe/bound")
        for key in ("scores", "control_scores", "selectivity"):
            assert_series(probe_panel["series"][f"{kind}/{key}"], model["layers"], model[key])
        assert_series(
            mdl_panel["series"][f"{kind}/compression"], model["layers"], model["mdl"]["compression"]
        )
    assert set(mi_panel["series"]) == expected_mi_keys
    assert set(probe_panel["series"]) == {
        f"{kind}/{key}" for kind in kinds for key in ("scores", "control_scores", "selectivity")
    }
    assert set(mdl_panel["series"]) == {f"{kind}/compression" for kind in kinds}
    assert mi_panel["ylabel"] == "bits" and probe_panel["ylabel"] == "dev accuracy"
    # Everything was there: no panel says something is missing.
    assert [panel["messages"] for panel in drawn["panels"].values()] == [[], [], []]


def test_missing_inputs_get_a_panel_naming_the_flag(plain_probe, tmp_path, check_figure):
    probe = read(plain_probe)
    model = probe["models"]["pretrained"]
    assert "control_scores" not in model and "mdl" not in model
    png = tmp_path / "plain.png"
    drawn = plot_instruments(probe, [], str(png), title="no flags")
    check_figure(png)
    panels = drawn["panels"]
    # No mi.json: the MI panel says so and still shows the probe's bound.
    assert set(panels["mi"]["series"]) == {"pretrained/probe/bound"}
    assert_series(panels["mi"]["series"]["pretrained/probe/bound"], [0, 2, 4], model["bound"])
    [mi_message] = panels["mi"]["messages"]
    assert "no mi.json" in mi_message and "allennlp mi" in mi_message
    # No --control: the score alone, and a note naming the flag.
    assert set(panels["probe"]["series"]) == {"pretrained/scores"}
    [control_message] = panels["probe"]["messages"]
    assert "control task" in control_message and "allennlp probe --control" in control_message
    # No --mdl: an empty panel naming the flag.
    assert panels["mdl"]["series"] == {}
    assert panels["mdl"]["messages"] == ["MDL: not in probe.json; run `allennlp probe --mdl`"]


def test_regression_mdl_panel_says_class_labels_only(sts_b_probe, tmp_path, check_figure):
    probe = read(sts_b_probe)
    model = probe["models"]["pretrained"]
    assert model["mdl"]["compression"] == [None, None, None]
    drawn = plot_instruments(probe, [], str(tmp_path / "sts_b.png"), title="STS-B")
    check_figure(tmp_path / "sts_b.png")
    panels = drawn["panels"]
    assert panels["mdl"]["series"] == {}
    [mdl_message] = panels["mdl"]["messages"]
    assert mdl_message.startswith("MDL: class labels only")
    # The control task does run on scores; the probe bound does not (no cross-entropy).
    assert_series(
        panels["probe"]["series"]["pretrained/control_scores"], [0, 2, 4], model["control_scores"]
    )
    assert panels["probe"]["messages"] == [] and panels["probe"]["ylabel"] == "dev pearson"
    assert "pretrained/probe/bound" not in panels["mi"]["series"]
    assert any("probe bound H(Y) - CE: none" in message for message in panels["mi"]["messages"])


def test_inputs_of_the_wrong_kind_or_task_are_refused(sst2_outputs, sts_b_probe, tmp_path):
    probe, mi = read(sst2_outputs["probe"]), read(sst2_outputs["edge"])
    with pytest.raises(ValueError, match="probe is an `allennlp mi` output"):
        plot_instruments(mi, [], str(tmp_path / "x.png"), title="x")
    with pytest.raises(ValueError, match="mi result 1 is an `allennlp probe` output"):
        plot_instruments(probe, [probe], str(tmp_path / "x.png"), title="x")
    with pytest.raises(ValueError, match="mi result 1 is an mi.json of sst2.*one of sts_b"):
        plot_instruments(read(sts_b_probe), [mi], str(tmp_path / "x.png"), title="x")
    assert not (tmp_path / "x.png").exists()


def load_script():
    spec = importlib.util.spec_from_file_location("instruments_figure", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_script_writes_the_figure(sst2_outputs, tmp_path, check_figure):
    out = tmp_path / "figures" / "sst2.png"
    args = [str(sst2_outputs[name]) for name in ("probe", "edge", "edge_projected")]
    completed = subprocess.run(
        [sys.executable, str(SCRIPT), *args, "--out", str(out), "--title", "SST-2"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert f"Wrote {out}" in completed.stdout
    check_figure(out)


def test_script_errors_name_the_file(sst2_outputs, tmp_path, capsys):
    main = load_script().main
    out = ["--out", str(tmp_path / "f.png"), "--title", "t"]
    not_json = tmp_path / "notes.txt"
    not_json.write_text("not json")
    probe, mi = str(sst2_outputs["probe"]), str(sst2_outputs["edge"])
    cases = [
        ([str(tmp_path / "nope.json")], "nope.json: no such file"),
        ([mi], f"{mi} is an `allennlp mi` output, not the probe.json"),
        ([probe, probe], f"{probe} is an `allennlp probe` output, not the mi.json"),
        ([probe, str(not_json)], f"{not_json} is not JSON"),
    ]
    for inputs, error in cases:
        with pytest.raises(SystemExit) as exit_info:
            main([*inputs, *out])
        assert exit_info.value.code == 2
        assert error in capsys.readouterr().err
    assert not (tmp_path / "f.png").exists()
