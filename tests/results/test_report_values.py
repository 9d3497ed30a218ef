"""
`tune-report` on metric values that are not scores: an infinity, a number whose x100 overflows,
a string. Each is reported with its own status and value, and none goes into a mean or a delta.
"""

import json
import math

import pytest

from allennlp_tune.reporting.render import render_json, render_markdown
from allennlp_tune.reporting.report import report_from_dirs
from allennlp_tune.rundir import load_run


def cells(markdown: str, task: str):
    row = next(line for line in markdown.splitlines() if line.startswith(f"| {task} |"))
    return [cell.strip() for cell in row.strip("| ").split(" | ")]


@pytest.mark.parametrize(
    "value, status, detail",
    [
        (1e308, "metric not finite", "best_validation_accuracy is 1e+308 in metrics.json: too "),
        (-1e301, "metric not finite", "best_validation_accuracy is -1e+301 in metrics.json"),
        (math.inf, "metric not finite", "best_validation_accuracy is inf in metrics.json"),
        ("0.9", "metric not a number", 'is a string ("0.9") in metrics.json, not a number'),
        ([0.9], "metric not a number", "is a list ([0.9]) in metrics.json, not a number"),
        (True, "metric not a number", "is a boolean (true) in metrics.json, not a number"),
        (math.nan, "missing metric", "best_validation_accuracy is nan in metrics.json"),
    ],
)
def test_a_value_that_is_not_a_score(tmp_path, make_run, value, status, detail):
    run = load_run(make_run(tmp_path / "sst2_bert_fe" / "seed_1", 1, value))
    assert (run.status, run.value) == (status, None) and detail in run.detail, run.detail


def test_the_report_says_so_and_averages_only_scores(tmp_path, make_run):
    make_run(tmp_path / "sst2_bert_fe" / "seed_1", 1, 1e308)
    make_run(tmp_path / "sst2_bert_fe" / "seed_2", 2, 0.80)
    make_run(tmp_path / "sst2_bert_ft" / "seed_1", 1, 0.85)
    make_run(tmp_path / "mrpc_bert_fe" / "seed_1", 1, 0.70)
    make_run(tmp_path / "mrpc_bert_ft" / "seed_1", 1, "0.9")
    report = report_from_dirs([tmp_path])
    markdown = render_markdown(report)
    sst2, mrpc = cells(markdown, "SST-2"), cells(markdown, "MRPC")
    assert sst2[2] == "80.0 (n=1), metric not finite (1/2)" and sst2[6] == "+5.0 [ft]"
    assert mrpc[4] == "metric not a number (1/1)" and mrpc[6] == "—"
    assert "inf" not in markdown.replace("info", "")
    assert f"- metric not finite: {tmp_path / 'sst2_bert_fe' / 'seed_1'} " in markdown
    assert 'best_validation_accuracy is a string ("0.9") in metrics.json' in markdown
    rows = {row["task"]: row for row in render_json(report)["rows"]}
    assert rows["sst2"]["cells"]["fe"]["mean"] == pytest.approx(80.0)
    assert rows["sst2"]["delta"] == pytest.approx(5.0) and rows["mrpc"]["delta"] is None
    statuses = [run["status"] for run in rows["sst2"]["cells"]["fe"]["runs"]]
    assert statuses == ["metric not finite", "ok"]
    json.dumps(render_json(report), allow_nan=False)  # no inf or nan left in the data
