"""
The expected best dev score of k trials (`reporting.expected_max`, Dodge et al. 2019): the
closed form against every draw of k trials enumerated, and its table in the report.
"""

import itertools
import statistics

import pytest

from allennlp_tune.reporting.expected_max import (
    expected_max,
    expected_max_curve,
    expected_max_table,
)


@pytest.mark.parametrize("values", [[0.71, 0.74, 0.69], [0.80, 0.80, 0.82, 0.77], [0.5]])
@pytest.mark.parametrize("higher_is_better", [True, False])
def test_the_closed_form_is_the_mean_best_of_every_k_draws(values, higher_is_better):
    best = max if higher_is_better else min
    for k in range(1, 5):
        draws = list(itertools.product(values, repeat=k))
        enumerated = statistics.fmean(best(draw) for draw in draws)
        assert expected_max(values, k, higher_is_better) == pytest.approx(enumerated, abs=1e-12)


def test_the_curve_starts_at_the_mean_and_rises_towards_the_best():
    values = [0.62, 0.81, 0.79, 0.70, 0.84]
    curve = expected_max_curve(values, most=40)
    assert curve[0] == pytest.approx(statistics.fmean(values))
    assert all(a <= b for a, b in zip(curve, curve[1:]))
    assert curve[len(values) - 1] < max(values) and curve[-1] == pytest.approx(0.84, abs=1e-3)
    with pytest.raises(ValueError):
        expected_max([], 1)


def test_the_table_shows_each_modes_curve_up_to_its_trials():
    saved = {
        "task": "reviews",
        "encoder": "bertuncased",
        "modes": [
            {"mode": "fe", "trial_values": [0.70, 0.80, 0.75, 0.78, 0.72, 0.79]},
            {"mode": "ft", "trial_values": [0.81, 0.86]},
            {"mode": "lora", "trials": {"complete": 2}},  # written before trial_values: left out
        ],
    }
    table = expected_max_table([saved])
    assert table.header == ["Cell", "Trials", "k=1", "k=2", "k=3", "k=5", "k=6", "Last trial added"]
    fe, ft = ([text for text, _ in row] for row in table.rows)
    assert len(table.rows) == 2 and fe[:3] == ["bertuncased reviews fe", "6", "75.7"], fe
    assert ft[1:5] == ["2", "83.5", "84.8", "—"], ft
    # ft's second trial raised the expected best of 2 over the mean of 1 by 1.25 points.
    assert ft[-1] == "+1.25" and fe[-1].startswith("+0.")
    assert expected_max_table([{"modes": [{"mode": "fe"}]}]) is None
