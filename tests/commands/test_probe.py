"""`allennlp probe` end to end on fixtures: pretrained tiny BERT and a fine-tuned archive."""

import json

import pytest
from allennlp.common.checks import ConfigurationError

from allennlp_tune.data.paths import FIXTURE_DATA_DIR


def test_probe_pretrained_and_fine_tuned(
    run_allennlp, probe_args, check_png, tmp_path, tiny_bert, sst2_archive
):
    args = probe_args("sst2", tmp_path, "--model-name", tiny_bert, "--archive", str(sst2_archive))
    run_allennlp(*args)
    results = json.loads((tmp_path / "probe.json").read_text())
    assert results["probe"] == "logistic" and results["metric"] == "accuracy"
    assert set(results["models"]) == {"pretrained", "fine_tuned"}
    for model in results["models"].values():
        assert model["layers"] == [0, 1, 2, 3, 4]
        assert model["num_train"] == 12 and model["num_dev"] == 6
        assert all(0.0 <= value <= 1.0 for value in model["scores"])
    assert results["models"]["fine_tuned"]["source"] == str(sst2_archive)
    check_png(tmp_path / "probe.png")


@pytest.mark.parametrize(
    "task, probe, metric",
    [
        ("sst2", "ridge", "accuracy"),
        ("cola", "logistic", "mcc"),
        ("mrpc", "logistic", "accuracy"),
        ("sts_b", "linear", "pearson"),
        ("sts_b", "ridge", "pearson"),
    ],
)
def test_every_probe_type_gives_per_layer_metrics(
    run_allennlp, probe_args, check_png, tmp_path, tiny_bert, task, probe, metric
):
    extra = ["--model-name", tiny_bert, "--probe", probe, "--layers", "0,-1", "--pooling", "max"]
    run_allennlp(*probe_args(task, tmp_path, *extra))
    results = json.loads((tmp_path / "probe.json").read_text())
    assert results["probe"] == probe and results["metric"] == metric
    model = results["models"]["pretrained"]
    assert model["layers"] == [0, 4] and len(model["scores"]) == 2
    for value in model["scores"]:
        assert value is None or -1.0 <= value <= 1.0
    check_png(tmp_path / "probe.png")


def test_bad_inputs_are_reported_before_loading_models(
    run_allennlp, probe_args, tmp_path, tiny_bert
):
    with pytest.raises(ConfigurationError, match="Give --model-name .* --archive"):
        run_allennlp(*probe_args("sst2", tmp_path))
    missing = probe_args("sst2", tmp_path, "--model-name", tiny_bert)
    missing[missing.index("--train-file") + 1] = str(tmp_path / "nope.tsv")
    with pytest.raises(ConfigurationError, match="--train-file .*nope.tsv does not exist"):
        run_allennlp(*missing)
    with pytest.raises(ConfigurationError, match="--archive .* does not exist"):
        run_allennlp(*probe_args("sst2", tmp_path, "--archive", "no.tar.gz"))
    with pytest.raises(ConfigurationError, match="needs class labels"):
        extra = ["--model-name", tiny_bert, "--probe", "logistic"]
        run_allennlp(*probe_args("sts_b", tmp_path, *extra))


def test_a_separate_dev_reader_reads_mrpc_glue_splits(run_allennlp, tmp_path, tiny_bert):
    # GLUE's MRPC train split is the release train file minus the dev ids; dev is GLUE's dev.tsv.
    glue = FIXTURE_DATA_DIR / "mrpc" / "glue"
    train_reader = {"type": "mrpc", "ids_file": str(glue / "dev_ids.tsv"), "ids": "exclude"}
    run_allennlp(
        "probe",
        "--model-name",
        tiny_bert,
        "--reader",
        json.dumps(train_reader),
        "--train-file",
        str(glue / "msr_paraphrase_train.txt"),
        "--dev-reader",
        "mrpc",
        "--dev-file",
        str(glue / "dev.tsv"),
        "--output-dir",
        str(tmp_path),
    )
    results = json.loads((tmp_path / "probe.json").read_text())
    assert results["dev_reader"] == "mrpc"
    model = results["models"]["pretrained"]
    assert (model["num_train"], model["num_dev"]) == (12 - 3, 3)  # 12 pairs, 3 of them dev


def test_probe_reports_the_bound_control_task_and_mdl(
    run_allennlp, probe_args, check_png, tmp_path, tiny_bert, capsys
):
    extra = ["--model-name", tiny_bert, "--layers", "0,-1", "--control", "--mdl"]
    run_allennlp(*probe_args("sst2", tmp_path, *extra))
    results = json.loads((tmp_path / "probe.json").read_text())
    assert results["units"] == "bits" and "dev labels" in results["bound"]
    assert "control_task" in results and "online code" in results["mdl_code"]
    model = results["models"]["pretrained"]
    assert 0.0 < model["label_entropy"] <= 1.0
    assert all(value > 0 for value in model["temperature"] + model["cross_entropy"])
    for score, cross_entropy, bound, control, selectivity in zip(
        model["scores"],
        model["calibrated_cross_entropy"],
        model["bound"],
        model["control_scores"],
        model["selectivity"],
    ):
        assert cross_entropy > 0 and bound == pytest.approx(model["label_entropy"] - cross_entropy)
        assert 0.0 <= control <= 1.0 and selectivity == pytest.approx(score - control)
    mdl = model["mdl"]
    assert mdl["uniform_codelength"] == pytest.approx(12.0)  # 12 train sentences, 2 classes
    assert mdl["block_ends"][-1] == 12 and len(mdl["codelength"]) == 2
    for codelength, compression in zip(mdl["codelength"], mdl["compression"]):
        assert compression == pytest.approx(12.0 / codelength)
    check_png(tmp_path / "probe.png")
    check_png(tmp_path / "mdl.png")
    printed = capsys.readouterr().out
    for header in ("pretrained bound", "pretrained selectivity", "pretrained compression"):
        assert header in printed


def test_probe_without_flags_has_the_bound_but_no_control_or_mdl(
    run_allennlp, probe_args, tmp_path, tiny_bert
):
    run_allennlp(*probe_args("sts_b", tmp_path, "--model-name", tiny_bert))
    model = json.loads((tmp_path / "probe.json").read_text())["models"]["pretrained"]
    # Scores: no cross-entropy, so no bound; no flags, no control or MDL entries.
    assert model["bound"] == [None] * 5 and model["cross_entropy"] == [None] * 5
    assert model["temperature"] == [None] * 5
    assert "control_scores" not in model and "mdl" not in model
    assert not (tmp_path / "mdl.png").exists()
