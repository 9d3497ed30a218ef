"""`allennlp mi` end to end on fixtures: pretrained tiny BERT and a fine-tuned archive."""

import json

import pytest
from allennlp.common.checks import ConfigurationError


def test_mi_pretrained_and_fine_tuned(
    run_allennlp, mi_args, check_png, tmp_path, tiny_bert, sst2_archive
):
    args = mi_args("sst2", tmp_path, "--model-name", tiny_bert, "--archive", str(sst2_archive))
    run_allennlp(*args)
    results = json.loads((tmp_path / "mi.json").read_text())
    assert results["units"] == "bits" and results["estimator"]["ensemble"] == "median"
    assert results["labels"] == "2 classes"
    for model in results["models"].values():
        assert model["layers"] == [0, 1, 2, 3, 4] and model["num_dev"] == 6
        # At most H(Y) <= 1 bit for two classes.
        assert all(0.0 <= value <= 1.0 for value in model["mi"] + model["random_label_mi"])
    check_png(tmp_path / "mi.png")


def test_mi_bins_regression_scores(run_allennlp, mi_args, tmp_path, tiny_bert):
    extra = ["--model-name", tiny_bert, "--score-bins", "2", "--ensemble", "weighted"]
    run_allennlp(*mi_args("sts_b", tmp_path, *extra))
    results = json.loads((tmp_path / "mi.json").read_text())
    assert results["labels"].startswith("real-valued scores binned into 2 equal-frequency bins")
    assert len(results["models"]["pretrained"]["mi"]) == 5


def test_mi_reports_bad_inputs(run_allennlp, mi_args, tmp_path, tiny_bert):
    with pytest.raises(ConfigurationError, match="Give --model-name"):
        run_allennlp(*mi_args("sst2", tmp_path))
    with pytest.raises(ConfigurationError, match="--score-bins must be at least 2"):
        extra = ["--model-name", tiny_bert, "--score-bins", "1"]
        run_allennlp(*mi_args("sts_b", tmp_path, *extra))


def test_mi_prints_the_probe_bound_beside_the_estimate(
    run_allennlp, mi_args, check_png, tmp_path, tiny_bert, capsys
):
    run_allennlp(*mi_args("sst2", tmp_path, "--model-name", tiny_bert))
    results = json.loads((tmp_path / "mi.json").read_text())
    assert results["estimator"]["estimator"] == "edge_projected"
    assert results["estimator"]["attenuation_correction"] is True  # the default corrects
    assert results["estimator"]["folds"] == 10 and "cross-fitted" in results["bound"]
    model = results["models"]["pretrained"]
    assert len(model["bound"]) == len(model["cross_entropy"]) == len(model["mi"]) == 5
    for bound, cross_entropy in zip(model["bound"], model["cross_entropy"]):
        assert bound <= 1.0 and cross_entropy > 0
    printed = capsys.readouterr().out
    assert "pretrained bound" in printed and "cross-fitted projection" in printed
    check_png(tmp_path / "mi.png")


def test_mi_keeps_the_papers_plain_edge_and_can_skip_the_bound(
    run_allennlp, mi_args, tmp_path, tiny_bert, capsys
):
    extra = ["--model-name", tiny_bert, "--estimator", "edge", "--no-bound", "--layers", "0"]
    run_allennlp(*mi_args("sst2", tmp_path, *extra))
    results = json.loads((tmp_path / "mi.json").read_text())
    assert results["estimator"]["name"] == "EDGE" and results["estimator"]["folds"] is None
    assert results["bound"] is None and results["models"]["pretrained"]["bound"] is None
    assert "bound" not in capsys.readouterr().out
    with pytest.raises(ConfigurationError, match="--folds must be at least 2"):
        run_allennlp(*mi_args("sst2", tmp_path, "--model-name", tiny_bert, "--folds", "1"))


def test_mi_keeps_the_uncorrected_projection_selectable(run_allennlp, mi_args, tmp_path, tiny_bert):
    extra = ["--model-name", tiny_bert, "--estimator", "edge_projected_uncorrected"]
    run_allennlp(*mi_args("sst2", tmp_path, *extra, "--no-bound", "--layers", "0"))
    estimator = json.loads((tmp_path / "mi.json").read_text())["estimator"]
    assert estimator["estimator"] == "edge_projected_uncorrected"
    assert estimator["attenuation_correction"] is False and estimator["folds"] == 10


def test_mi_takes_the_earlier_name_of_the_corrected_estimator(
    run_allennlp, mi_args, tmp_path, tiny_bert, caplog
):
    # `edge_projected_corrected` was the opt-in name before the correction became the default.
    extra = ["--model-name", tiny_bert, "--estimator", "edge_projected_corrected"]
    run_allennlp(*mi_args("sst2", tmp_path, *extra, "--no-bound", "--layers", "0"))
    estimator = json.loads((tmp_path / "mi.json").read_text())["estimator"]
    assert estimator["estimator"] == "edge_projected"
    assert estimator["attenuation_correction"] is True
    assert "earlier name" in caplog.text
