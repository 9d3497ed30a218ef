"""Metrics against hand-computed values."""

import math

import pytest
import torch
from allennlp.data import Vocabulary
from allennlp.training.metrics import SpanBasedF1Measure

from allennlp_tune.training.metrics import (
    ClassificationMetrics,
    MatthewsCorrelation,
    RegressionMetrics,
)


def one_hot(indices, num_classes):
    return torch.nn.functional.one_hot(torch.tensor(indices), num_classes).float()


def test_pearson_spearman_and_mse_on_a_toy_vector():
    # Predictions 1, 2, 3, 4, 100 against gold 1, 2, 3, 4, 5, fed in two batches.
    # Pearson: deviations from the means (22 and 3) are (-21, -20, -19, -18, 78) and
    # (-2, -1, 0, 1, 2); sum of products 200, sums of squares 7610 and 10.
    # Spearman: the ranks agree exactly. MSE: only the last error, 95 ** 2, over 5 items.
    metrics = RegressionMetrics()
    metrics(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0]))
    metrics(torch.tensor([3.0, 4.0, 100.0]), torch.tensor([3.0, 4.0, 5.0]))
    values = metrics.get_metric(reset=True)
    assert values["pearson"] == pytest.approx(200 / math.sqrt(7610 * 10), abs=1e-5)
    assert values["spearman"] == pytest.approx(1.0)
    assert values["mse"] == pytest.approx(95**2 / 5)
    # Reset, and a constant prediction gives 0 rather than NaN.
    metrics(torch.tensor([2.0, 2.0, 2.0]), torch.tensor([1.0, 2.0, 3.0]))
    assert metrics.get_metric() == {"pearson": 0.0, "spearman": 0.0, "mse": pytest.approx(2 / 3)}


def test_pearson_and_spearman_differ_when_only_the_order_agrees():
    # x = (1, 2, 3, 4, 5), y = (2, 1, 4, 3, 5): deviations (-2, -1, 0, 1, 2) and
    # (-1, -2, 1, 0, 2), products sum to 8, both sums of squares are 10: r = 0.8; the ranks are
    # the values, so Spearman is 0.8 too. Squaring y keeps the ranks but not the linearity.
    metrics = RegressionMetrics()
    metrics(torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0]), torch.tensor([2.0, 1.0, 4.0, 3.0, 5.0]))
    values = metrics.get_metric(reset=True)
    assert values["pearson"] == pytest.approx(0.8, abs=1e-6)
    assert values["spearman"] == pytest.approx(0.8, abs=1e-6)
    metrics(torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0]), torch.tensor([4.0, 1.0, 16.0, 9.0, 25.0]))
    values = metrics.get_metric(reset=True)
    assert values["spearman"] == pytest.approx(0.8, abs=1e-6)
    assert values["pearson"] != pytest.approx(0.8, abs=1e-3)


def test_matthews_correlation_binary_by_hand():
    # gold 1 1 1 0 0 0, predicted 1 1 0 0 0 1: tp 2, fn 1, tn 2, fp 1;
    # (2 * 2 - 1 * 1) / sqrt(3 * 3 * 3 * 3) = 1 / 3.
    mcc = MatthewsCorrelation()
    mcc(one_hot([1, 1, 0], 2), torch.tensor([1, 1, 1]))
    mcc(one_hot([0, 0, 1], 2), torch.tensor([0, 0, 0]))
    assert mcc.get_metric(reset=True) == pytest.approx(1 / 3)
    # All predictions in one class: the denominator is 0 and the value 0, as in scikit-learn.
    mcc(one_hot([1, 1, 1], 2), torch.tensor([1, 0, 1]))
    assert mcc.get_metric(reset=True) == 0.0


def test_matthews_correlation_multiclass_matches_scikit_learn():
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    gold = [0, 1, 2, 2, 1, 0, 2, 1, 0, 2]
    predicted = [0, 2, 2, 1, 1, 0, 2, 0, 0, 2]
    mcc = MatthewsCorrelation()
    mcc(one_hot(predicted, 3), torch.tensor(gold), mask=torch.ones(10, dtype=torch.bool))
    expected = sklearn_metrics.matthews_corrcoef(gold, predicted)
    assert mcc.get_metric() == pytest.approx(expected)


def test_classification_metrics_report_f1_of_the_positive_label():
    vocab = Vocabulary()
    vocab.add_tokens_to_namespace(["0", "1"], "labels")
    metrics = ClassificationMetrics(vocab, positive_label="1")
    # gold 1 1 0 0, predicted 1 0 1 0: precision 1/2, recall 1/2, accuracy 1/2, mcc 0.
    metrics(one_hot([1, 0, 1, 0], 2), torch.tensor([1, 1, 0, 0]))
    values = metrics.get_metric(reset=True)
    assert values == pytest.approx(
        {"accuracy": 0.5, "mcc": 0.0, "precision": 0.5, "recall": 0.5, "f1": 0.5}
    )


@pytest.mark.parametrize(
    "label_encoding, gold, predicted",
    [
        # IOB1 (CoNLL's eng.* files): B- only between two adjacent spans of one type.
        ("IOB1", ["I-PER", "I-PER", "O", "I-LOC", "B-LOC", "O"],
         ["I-PER", "I-PER", "O", "I-LOC", "I-LOC", "O"]),
        # The same sentences in IOB2 (the reader's IOB2 files, or convert_to_coding_scheme IOB2;
        # the span metric calls it "BIO").
        ("BIO", ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "O"],
         ["B-PER", "I-PER", "O", "B-LOC", "I-LOC", "O"]),
    ],
)  # fmt: skip
def test_span_f1_on_a_toy_sentence(label_encoding, gold, predicted):
    # Gold spans PER(0-1), LOC(3), LOC(4); predicted PER(0-1), LOC(3-4).
    # One true positive: precision 1/2, recall 1/3, F1 = 2 * (1/6) / (5/6) = 0.4.
    vocab = Vocabulary()
    tags = sorted(set(gold) | set(predicted))
    vocab.add_tokens_to_namespace(tags, "labels")
    metric = SpanBasedF1Measure(vocab, tag_namespace="labels", label_encoding=label_encoding)
    index = vocab.get_token_index
    logits = one_hot([index(tag, "labels") for tag in predicted], len(tags)).unsqueeze(0)
    gold_ids = torch.tensor([[index(tag, "labels") for tag in gold]])
    metric(logits, gold_ids, torch.ones_like(gold_ids, dtype=torch.bool))
    values = metric.get_metric()
    assert values["precision-overall"] == pytest.approx(1 / 2)
    assert values["recall-overall"] == pytest.approx(1 / 3)
    assert values["f1-measure-overall"] == pytest.approx(0.4)
    assert values["f1-measure-PER"] == pytest.approx(1.0)
