"""tune-report --margin M: a tie with its 95% interval inside (-M, +M) is "equivalent within M"."""

import json
import sys

import pytest

from allennlp_tune.reporting.intervals import equivalent_verdict, within_margin
from allennlp_tune.reporting.paired import TIE, PairedResult
from allennlp_tune.reporting.render import render_json, render_markdown
from allennlp_tune.reporting.tables import VERDICT_HEADER
from tests.results.test_report_verdict import flip, make, notes, report, table, wrong_every


@pytest.fixture
def near_tie(tmp_path, make_run):
    """MRPC: every seed of fe and ft wrong on every fourth example, ft on one more (-0.8 points)."""
    root = tmp_path / "runs"
    for seed in (1, 2):
        fe = wrong_every(4)
        ft = list(fe)
        ft[1] = flip(fe[1])  # fe is right on example 1: ft has one error more
        make(make_run, root, "mrpc_bert_fe", seed, fe)
        make(make_run, root, "mrpc_bert_ft", seed, ft)
    return root


def result(low, high, verdict=TIE):
    return PairedResult("accuracy", "ft", "fe", 80.0, 79.0, 1.0, low, high, verdict, 100, 3, 3, 300)


def test_within_margin_only_turns_ties_inside_the_margin():
    assert within_margin(result(-0.4, 0.3), 0.5).verdict == "equivalent within 0.5"
    assert within_margin(result(-0.4, 0.6), 0.5).verdict == TIE  # crosses +0.5
    assert within_margin(result(-0.4, 0.3), None).verdict == TIE
    # A win inside the margin stays a win.
    assert within_margin(result(0.1, 0.3, "ft"), 0.5).verdict == "ft"
    assert equivalent_verdict(2.0) == "equivalent within 2"


def test_the_report_says_equivalent_within_the_margin(near_tie):
    plain = render_markdown(report(near_tie))
    _, rows = table(plain, "BERT")
    assert rows["MRPC"][VERDICT_HEADER].startswith("tie -0.8 [")

    wide = report(near_tie, margin=5.0)
    markdown = render_markdown(wide)
    _, rows = table(markdown, "BERT")
    assert rows["MRPC"][VERDICT_HEADER].startswith("equivalent within 5 -0.8 [")
    assert any(
        line.startswith("--margin 5: a tie")
        for line in notes(markdown, "Paired comparisons (verdicts)")
    )
    data = render_json(wide)
    assert data["margin"] == 5.0 and data["rows"][0]["verdict"] == "equivalent within 5"

    # A margin narrower than the interval leaves the tie.
    _, rows = table(render_markdown(report(near_tie, margin=0.5)), "BERT")
    assert rows["MRPC"][VERDICT_HEADER].startswith("tie -0.8 [")


def test_the_margin_option(near_tie, tmp_path, monkeypatch, capsys):
    from allennlp.commands import main

    import allennlp_tune.commands.tune_report  # noqa: F401

    out = tmp_path / "r.json"
    argv = ["allennlp", "tune-report", str(near_tie), "--bootstrap", "200", "--margin", "5"]
    monkeypatch.setattr(sys, "argv", argv + ["--json", str(out)])
    main()
    assert "equivalent within 5 -0.8 [" in capsys.readouterr().out
    assert json.loads(out.read_text())["margin"] == 5.0
    for bad in ("0", "-1", "x", "inf"):
        monkeypatch.setattr(sys, "argv", argv[:-1] + [bad])
        with pytest.raises(SystemExit):
            main()
        assert "positive number of points" in capsys.readouterr().err
