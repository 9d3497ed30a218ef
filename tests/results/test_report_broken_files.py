"""tune-report on run directories whose files are broken: one status per run, naming the file."""

import json

from allennlp_tune.commands.tune_report import add_report_parser
from allennlp_tune.rundir import load_run
from tests.results.test_grid import run_cli


def test_broken_config_and_metrics_are_reported_per_run_and_the_rest_renders(
    tmp_path, make_run, capsys
):
    root = tmp_path / "runs"
    for seed, value in [(1, 0.84), (2, 0.86)]:
        make_run(root / "sick_e_bert_fe" / f"seed_{seed}", seed, value)
    # A config.json whose trainer is not an object (a hand-edited or foreign file).
    string_trainer = make_run(root / "sick_e_bert_ft" / "seed_1", 1, 0.9)
    (string_trainer / "config.json").write_text(json.dumps({"trainer": "gradient_descent"}))
    # A metrics.json cut short (disk full, a copy interrupted): not "missing".
    truncated = make_run(root / "sick_e_bert_ft" / "seed_2", 2, 0.9)
    (truncated / "metrics.json").write_text('{"best_validation_accuracy": 0.9')
    # A metric that is not a string, and a metrics.json that is a list.
    bad_metric = make_run(root / "sick_e_bert_ft" / "seed_3", 3, 0.9)
    (bad_metric / "config.json").write_text(json.dumps({"trainer": {"validation_metric": 3}}))
    listed = make_run(root / "sick_e_bert_ft" / "seed_4", 4, 0.9)
    (listed / "metrics.json").write_text("[0.9]")

    run = load_run(string_trainer)
    assert run.status == "unreadable"
    assert run.detail.startswith('config.json: trainer is a string ("gradient_descent")')
    assert "expected an object" in run.detail
    run = load_run(truncated)
    assert run.status == "unreadable"
    assert run.detail.startswith("metrics.json: not valid JSON (")
    assert "no metrics.json" not in run.detail
    assert "config.json: trainer.validation_metric is a number (3)" in load_run(bad_metric).detail
    assert load_run(listed).detail == ("metrics.json: holds a list ([0.9]), expected a JSON object")

    run_cli(add_report_parser, [root])
    out = capsys.readouterr().out
    # The fe runs still score; the ft cell says what its runs are (their configs differ, too).
    assert "| SICK-E | accuracy | 85.0 ± 1.4 (n=2) | 84.8 | unreadable (4/4), mixed" in out
    assert f"unreadable: {string_trainer} (config.json: trainer is a string" in out
    assert f"unreadable: {truncated} (metrics.json: not valid JSON" in out
