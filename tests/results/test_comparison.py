"""
The Python API (`from allennlp_tune import Comparison`): one comparison built and checked once,
run, and its answer read from the returned report, as a notebook would; its checks are the
command's, with the command's messages, before anything is written.
"""

import pytest
from allennlp.common.checks import ConfigurationError

from allennlp_tune import Comparison
from allennlp_tune.reporting.answer import answer_lines
from allennlp_tune.reporting.render import render_markdown
from tests.results.test_compare import BERT, run_names, write_reviews


def test_a_comparison_runs_and_returns_its_report(tmp_path):
    task = write_reviews(tmp_path / "task")
    results = tmp_path / "out"
    comparison = Comparison(
        str(task), encoder=str(BERT), modes=["fe", "ft"], seeds=[1, 2], results_dir=results,
        ext_vars={"TUNE_EPOCHS": "1"}, progress=False, plan=False,
    )  # fmt: skip
    # Frozen and normalised once: what it will run is what it says.
    assert comparison.modes == ("fe", "ft") and comparison.seeds == (1, 2)
    with pytest.raises(AttributeError):
        comparison.seeds = (3,)
    report = comparison.run()
    assert run_names(results) == [
        f"reviews_bertuncased_{mode}/seed_{seed}" for mode in ("fe", "ft") for seed in (1, 2)
    ]
    rows = report.rows()
    assert [row.task for row in rows] == ["reviews"]
    assert {mode: len(cell.scores) for mode, cell in rows[0].cells.items() if cell.runs} == {
        "fe": 2,
        "ft": 2,
    }
    assert [(p.mode_a, p.mode_b) for p in rows[0].paired] == [("ft", "fe")]  # the verdict's pair
    answer = answer_lines(report)
    assert answer and any("ft" in line and "fe" in line for line in answer), answer
    assert render_markdown(report) == render_markdown(comparison.report())
    # Resumable as the command: a second run trains nothing and reads the same runs.
    times = {run: (run / "model.tar.gz").stat().st_mtime_ns for run in results.glob("*/seed_*")}
    again = comparison.train()
    assert (len(again.trained), len(again.skipped)) == (0, 4)
    assert {run: (run / "model.tar.gz").stat().st_mtime_ns for run in times} == times


@pytest.mark.parametrize(
    "options, message",
    [
        ({"looks": (3, 5)}, "--looks needs --sequential."),
        ({"sequential": True, "seeds": (1, 2, 3)}, "list at least 7 seeds"),
        ({"sequential": True, "coordinator": "sqlite:///w.db"}, "do not go together"),
        ({"ext_vars": {"TUNE_LRR": "1e-3"}}, "TUNE_LRR"),
        ({"budget": 2, "spaces": {"ft": "TUNE_LR=1e-4"}}, "--space ft: --param 'TUNE_LR=1e-4'"),
        ({"spaces": ["ft"]}, "expected MODE="),
        ({"heartbeat": 5}, "--heartbeat and --grace need --coordinator."),
    ],
)
def test_a_comparison_that_cannot_work_is_refused_when_built(tmp_path, options, message):
    task = write_reviews(tmp_path / "task")
    with pytest.raises(ConfigurationError, match=message):
        Comparison(str(task), encoder=str(BERT), results_dir=tmp_path / "out", **options)
    assert not (tmp_path / "out").exists()
