"""
Scoring finished runs on the test split after the decision on dev (`experiments.test_split`,
`--test`, `tune-test`): AllenNLP's evaluate into `metrics.json`, `test_predictions.jsonl`, once
per archive; `tune-report --split test` with paired intervals from the test predictions, and the
dev report's test table. The grid trains the tiny bag-of-embeddings config in this process
(four runs, about a second each); one `tune-test` scores a run in its subprocess.
"""

import csv
import json
import os
import sys
from pathlib import Path

import pytest
from allennlp.commands import main as allennlp_main
from allennlp.common.checks import ConfigurationError

import allennlp_tune  # noqa: F401  (registers the subcommands)
from allennlp_tune.experiments import test_split
from allennlp_tune.experiments.grid import run_grid
from allennlp_tune.experiments.outputs import predict_in_process
from allennlp_tune.experiments.test_split import is_scored, score_test_split
from allennlp_tune.reporting.html_report import render_report_html
from allennlp_tune.reporting.paired import compare_modes
from allennlp_tune.reporting.predictions import read_predictions
from allennlp_tune.reporting.render import render_json, render_markdown
from allennlp_tune.reporting.report import report_from_dirs
from allennlp_tune.reporting.tables import TEST_TITLE
from allennlp_tune.rundir import load_run

TEST_ROWS = [
    ("a charming film", "1"),
    ("slow and dull", "0"),
    ("funny and warm", "1"),
    ("flat", "0"),
    ("a wonderful joy", "1"),
]
REPLICATES = 200


def train_here(command, environment, log_path) -> int:
    """A `Runner` that trains in this process (`allennlp train`'s own function), for speed."""
    from allennlp.commands.train import train_model_from_file

    config = command[command.index("train") + 1]
    run_dir = command[command.index("-s") + 1]
    ext_vars = {key: value for key, value in environment.items() if key.startswith("TUNE_")}
    ext_vars.pop("TUNE_GRID_LOCK_FD", None)
    with pytest.MonkeyPatch.context() as patch:
        for key, value in ext_vars.items():
            patch.setenv(key, value)
        try:
            train_model_from_file(config, run_dir, file_friendly_logging=True)
        except Exception as error:  # as the subprocess would: a failed run, not a crash
            Path(log_path).write_text(f"{type(error).__name__}: {error}\n")
            return 1
    return 0


def score_here(command, environment, log_path) -> int:
    """`train_subprocess` for the scoring child: its script's work, in this process."""
    assert command[1:3] == ["-c", test_split._SCORE_SCRIPT]
    test_split.score_runs_in_process(command[3:])
    return 0


def write_configs(folder: Path, tiny_config: Path):
    """`sst2_bow_fe` and `sst2_bow_ft`: the tiny config, with a test file of 5 rows."""
    folder.mkdir(parents=True)
    test_file = folder / "test.tsv"
    with open(test_file, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, delimiter="\t")
        writer.writerow(["sentence", "label"])
        writer.writerows(TEST_ROWS)
    configs = []
    for mode in ("fe", "ft"):
        config = folder / f"sst2_bow_{mode}.jsonnet"
        patch = f"{{test_data_path: {json.dumps(str(test_file))}}}"
        config.write_text(f"(import {json.dumps(str(tiny_config))}) + {patch}\n")
        configs.append(config)
    return configs


def grid(configs, results: Path, ext_vars, seeds=(1, 2), **options):
    return run_grid(
        configs,
        list(seeds),
        results,
        ext_vars=ext_vars,
        runner=train_here,
        predict=predict_in_process,
        progress=False,
        plan=False,
        **options,
    )


def accuracy(path: Path) -> float:
    predictions = read_predictions(path)
    right = sum(gold == guess for gold, guess in zip(predictions.golds, predictions.predictions))
    return right / len(predictions)


def allennlp(monkeypatch, *argv: str) -> int:
    monkeypatch.setattr(sys, "argv", ["allennlp", *argv])
    try:
        allennlp_main(prog="allennlp")
    except SystemExit as exit:
        return exit.code
    return 0


def test_runs_are_scored_on_test_once_and_reported_with_test_intervals(
    tmp_path, monkeypatch, capsys, tiny_config, tiny_ext_vars
):
    configs = write_configs(tmp_path / "configs", tiny_config)
    results = tmp_path / "results"
    grid(configs, results, tiny_ext_vars)
    runs = sorted(results.glob("sst2_bow_*/seed_*"))
    assert len(runs) == 4 and not any((run / "test_predictions.jsonl").exists() for run in runs)
    # Trained and reported on dev only: nothing read the test file, no test table yet.
    assert load_run(runs[0]).test_value is None
    assert TEST_TITLE not in render_markdown(report_from_dirs([results]))

    scoring = score_test_split([results], in_process=True)
    assert sorted(scoring.scored) == runs and not scoring.failed and not scoring.notes
    for run in runs:
        lines = [
            json.loads(line) for line in (run / "test_predictions.jsonl").read_text().splitlines()
        ]
        assert [line["index"] for line in lines] == list(range(len(TEST_ROWS)))
        assert [line["gold"] for line in lines] == [label for _, label in TEST_ROWS]
        metrics = json.loads((run / "metrics.json").read_text())
        # AllenNLP's evaluate and the predictions agree; dev scores are kept.
        assert metrics["test_accuracy"] == pytest.approx(accuracy(run / "test_predictions.jsonl"))
        assert "best_validation_accuracy" in metrics and "test_loss" in metrics
        record = json.loads((run / "tune_run.json").read_text())["test"]
        assert record["examples"] == len(TEST_ROWS) and is_scored(run)

    # Once: a rerun scores nothing, and touches no file.
    written = {run: (run / "test_predictions.jsonl").stat().st_mtime_ns for run in runs}
    again = score_test_split([results], in_process=True)
    assert not again.scored and sorted(again.already) == runs
    assert {run: (run / "test_predictions.jsonl").stat().st_mtime_ns for run in runs} == written

    # --split test: test scores, and the paired interval from the test predictions.
    report = report_from_dirs([results], split="test", replicates=REPLICATES)
    [row] = report.encoder_rows["bow"]
    result = row.verdict
    assert result is not None and result.examples == len(TEST_ROWS)
    by_mode = {
        mode: sorted(results.glob(f"sst2_bow_{mode}/seed_*/test_predictions.jsonl"))
        for mode in ("fe", "ft")
    }
    mean = {mode: sum(map(accuracy, paths)) / len(paths) for mode, paths in by_mode.items()}
    assert result.difference == pytest.approx(100 * (mean["ft"] - mean["fe"]))
    [direct] = compare_modes(by_mode, "accuracy", pairs=[("ft", "fe")], replicates=REPLICATES)
    assert (result.low, result.high) == pytest.approx((direct.low, direct.high))
    assert row.cells["ft"].mean == pytest.approx(100 * mean["ft"])
    markdown = render_markdown(report)
    assert "Test examples" in markdown and "5 test examples" in markdown
    assert "No paired intervals with --split" not in markdown
    assert "On the test split: these verdicts check the choice made on dev" in markdown

    # The dev report: the test table, each pair's dev interval beside its test one.
    dev = report_from_dirs([results], replicates=REPLICATES)
    [dev_row] = dev.encoder_rows["bow"]
    assert dev_row.pair("ft", "fe", test=True).as_dict() == result.as_dict()
    markdown = render_markdown(dev)
    tables = markdown.split(f"## bow: {TEST_TITLE}")
    assert len(tables) == 2, markdown
    [line] = [line for line in tables[1].splitlines() if line.startswith("| SST-2 (accuracy) |")]
    assert f"dev {dev_row.verdict.text()} / test {result.text()}" in line
    assert f"{100 * mean['fe']:.1f}" in line
    data = render_json(dev)["rows"][0]["test"]
    assert data["paired"] == [result.as_dict()] and data["cells"]["ft"]["n"] == 2
    assert TEST_TITLE in render_report_html(dev)

    # tune-grid --test: nothing trained, nothing scored twice.
    argv = ["tune-grid", *map(str, configs), "--seeds", "1", "2", "--results-dir", str(results)]
    argv += [arg for item in tiny_ext_vars.items() for arg in ("--ext-var", "=".join(item))]
    assert allennlp(monkeypatch, *argv, "--test", "--no-plan", "--no-progress") == 0
    printed = capsys.readouterr()
    assert "0 trained, 4 already complete" in printed.err
    assert "0 run(s) scored on test, 4 scored before, 0 failed" in printed.err
    assert TEST_TITLE in printed.out

    # A run trained again loses its test predictions: moved aside by the grid (a change) ...
    faster = dict(tiny_ext_vars, TUNE_LR="0.02")
    retrained = grid(configs[:1], results, faster, seeds=[1], retrain_changed=True)
    [fresh] = retrained.retrained
    assert not (fresh / "test_predictions.jsonl").exists() and not is_scored(fresh)
    assert load_run(fresh).test_value is None and not load_run(fresh).test_predictions
    # ... or trained again in its folder (another archive): its predictions no longer count.
    stale = results / "sst2_bow_ft" / "seed_2"
    os.utime(stale / "model.tar.gz", ns=(1, 1))
    assert not load_run(stale).test_predictions and not is_scored(stale)
    assert load_run(stale).test_value is None
    assert "earlier model.tar.gz" in load_run(stale, split="test").detail
    # tune-test scores exactly these two (in this process, as its subprocess would: faster).
    monkeypatch.setattr(test_split, "train_subprocess", score_here)
    assert allennlp(monkeypatch, "tune-test", str(results)) == 0
    printed = capsys.readouterr()
    assert "2 run(s) scored on test, 2 scored before, 0 failed" in printed.err, printed.err
    assert is_scored(fresh) and is_scored(stale) and load_run(stale).test_predictions


def test_no_test_split_and_runs_without_archive_are_said_in_a_line(tmp_path, monkeypatch, capsys):
    results = tmp_path / "results"
    for mode in ("fe", "ft"):
        run = results / f"sst2_bow_{mode}" / "seed_1"
        run.mkdir(parents=True)
        (run / "config.json").write_text(json.dumps({"trainer": {}}))
        (run / "metrics.json").write_text(json.dumps({"best_validation_loss": 0.5}))
        (run / "tune_run.json").write_text(json.dumps({"status": "ok"}))
    with pytest.raises(ConfigurationError, match="have no test split"):
        score_test_split([results])
    assert allennlp(monkeypatch, "tune-test", str(results)) == 2
    err = capsys.readouterr().err
    assert "have no test split" in err and "Traceback" not in err
    assert allennlp(monkeypatch, "tune-test", str(tmp_path / "nowhere")) == 2
    assert "nowhere: no such directory" in capsys.readouterr().err

    # A test split but no archive (deleted to free disk): named, not scored, no crash.
    run = results / "sst2_bow_ft" / "seed_1"
    config = {"trainer": {}, "test_data_path": str(tmp_path / "test.tsv")}
    (run / "config.json").write_text(json.dumps(config))
    scoring = score_test_split([results])
    assert scoring.failed == [run] and not scoring.scored
    assert any(f"{run}: not scored on test: it has no model.tar.gz" in n for n in scoring.notes)
    assert any("1 complete run(s) have no test_data_path" in note for note in scoring.notes)


def test_training_never_reads_the_test_file_and_test_scoring_names_its_bad_row(
    tmp_path, tiny_config, tiny_ext_vars
):
    """A test file with an unknown label (line 4): the runs train (the config leaves the test
    split out of the vocabulary, as every task config does; AllenNLP's train still read it
    whole and failed every run), and only scoring on test refuses it, naming the file and line."""
    folder = tmp_path / "configs"
    folder.mkdir()
    test_file = folder / "test.tsv"
    rows = [("sentence", "label"), ("a charming film", "1"), ("slow", "0"), ("so so", "7")]
    test_file.write_text("".join(f"{text}\t{label}\n" for text, label in rows), encoding="utf-8")
    config = folder / "sst2_bow_ft.jsonnet"
    patch = {
        "test_data_path": str(test_file),
        "datasets_for_vocab_creation": ["train", "validation"],
    }
    config.write_text(f"(import {json.dumps(str(tiny_config))}) + {json.dumps(patch)}\n")
    results = tmp_path / "results"
    trained = grid([config], results, tiny_ext_vars, seeds=(1,))
    assert not trained.failed and len(trained.trained) == 1, trained
    scoring = score_test_split([results], in_process=True)
    run = results / "sst2_bow_ft" / "seed_1"
    assert scoring.failed == [run] and not scoring.scored
    note = next(note for note in scoring.notes if note.startswith(f"{run}: not scored on test"))
    assert f"{test_file}, line 4: " in note and "'7'" in note, note
