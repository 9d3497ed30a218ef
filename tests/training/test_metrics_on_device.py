"""
The classification metrics accumulate without synchronising the device (issue #20) and give the
values they gave before: scikit-learn's, and AllenNLP's `CategoricalAccuracy` / `F1Measure`.
"""

import pytest
import torch
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.training.metrics import CategoricalAccuracy, F1Measure

from allennlp_tune.training.metrics import (
    ClassificationMetrics,
    MatthewsCorrelation,
    RegressionMetrics,
)

sklearn_metrics = pytest.importorskip("sklearn.metrics")

# Tensor methods that copy a value to the host (and so wait for the device).
HOST_READS = ("item", "tolist", "__bool__", "__int__", "__float__", "cpu", "numpy")


@pytest.fixture
def host_reads(monkeypatch):
    """Counts the calls of `HOST_READS` on tensors."""
    calls = []
    for name in HOST_READS:
        original = getattr(torch.Tensor, name)

        def counting(self, *args, _name=name, _original=original, **kwargs):
            calls.append(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, counting)
    return calls


def vocabulary(num_labels):
    vocab = Vocabulary()
    vocab.add_tokens_to_namespace([str(label) for label in range(num_labels)], "labels")
    return vocab


def random_batches(num_classes, seed, num_batches=7):
    """Logits, labels (some -100) and masks of batches of varying size, as a model sees them."""
    generator = torch.Generator().manual_seed(seed)
    batches = []
    for _ in range(num_batches):
        size = int(torch.randint(1, 40, (1,), generator=generator))
        labels = torch.randint(0, num_classes, (size,), generator=generator)
        # Logits that agree with the labels more often than not, so the MCC is not ~0.
        logits = torch.randn(size, num_classes, generator=generator)
        logits[torch.arange(size), labels] += 1.0
        mask = torch.rand(size, generator=generator) > 0.2
        labels[torch.rand(size, generator=generator) < 0.1] = -100  # padding rows
        batches.append((logits, labels, mask))
    return batches


def kept(batches):
    """The gold and predicted labels of the items the metrics count."""
    gold, predicted = [], []
    for logits, labels, mask in batches:
        keep = mask & (labels != -100)
        gold += labels[keep].tolist()
        predicted += logits.argmax(-1)[keep].tolist()
    return gold, predicted


@pytest.mark.parametrize("num_classes, seed", [(2, 0), (2, 1), (3, 2), (5, 3)])
def test_classification_metrics_match_scikit_learn(num_classes, seed):
    positive = num_classes - 1
    metrics = ClassificationMetrics(vocabulary(num_classes), positive_label=str(positive))
    batches = random_batches(num_classes, seed)
    for logits, labels, mask in batches:
        metrics(logits, labels, mask)
    gold, predicted = kept(batches)
    precision, recall, f1, _ = sklearn_metrics.precision_recall_fscore_support(
        gold, predicted, labels=[positive], zero_division=0
    )
    expected = {
        "accuracy": sklearn_metrics.accuracy_score(gold, predicted),
        "mcc": sklearn_metrics.matthews_corrcoef(gold, predicted),
        "precision": precision[0],
        "recall": recall[0],
        "f1": f1[0],
    }
    assert abs(expected["mcc"]) > 0.1  # a real correlation, not the degenerate 0
    assert metrics.get_metric(reset=True) == pytest.approx(expected, abs=1e-12)
    # reset: no batch, all 0.
    assert set(metrics.get_metric().values()) == {0.0}


@pytest.mark.parametrize("seed", [4, 5])
def test_classification_metrics_equal_allennlps(seed):
    # The metrics the models used before: CategoricalAccuracy and F1Measure.
    metrics = ClassificationMetrics(vocabulary(3), positive_label="1")
    accuracy, f1 = CategoricalAccuracy(), F1Measure(1)
    for logits, labels, mask in random_batches(3, seed):
        metrics(logits, labels, mask)
        keep = mask & (labels != -100)
        accuracy(logits, labels.clamp_min(0), keep)
        f1(logits, labels.clamp_min(0), keep)
    values = metrics.get_metric()
    assert values["accuracy"] == pytest.approx(accuracy.get_metric(), abs=1e-12)
    for name, value in f1.get_metric().items():
        assert values[name] == pytest.approx(value, abs=1e-6)


def test_no_batch_reads_the_device_and_get_metric_reads_it_once(host_reads):
    metrics = ClassificationMetrics(vocabulary(2), positive_label="1")
    batches = random_batches(2, seed=6)
    host_reads.clear()  # (making the data reads it)
    for logits, labels, mask in batches:
        metrics(logits, labels, mask)
    assert host_reads == []
    # The state is the confusion counts, a tensor on the predictions' device, until read.
    assert isinstance(metrics._confusion._counts, torch.Tensor)
    metrics.get_metric()
    assert host_reads == ["tolist"]


def test_regression_batches_do_not_read_the_mse_from_the_device(host_reads):
    metrics = RegressionMetrics()
    metrics(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 3.0]))
    metrics(torch.tensor([0.0]), torch.tensor([2.0]))
    # (AllenNLP's Pearson and Spearman are as they are; the squared error and count are not read.)
    assert isinstance(metrics._squared_error, torch.Tensor)
    assert isinstance(metrics._count, torch.Tensor)
    assert metrics.get_metric()["mse"] == pytest.approx(5 / 3)


def test_a_gold_label_outside_the_classes_is_reported_when_read():
    mcc = MatthewsCorrelation()
    logits = torch.randn(4, 2)
    # Masked out: not counted, not an error.
    mcc(logits, torch.tensor([0, 1, 7, 1]), torch.tensor([True, True, False, True]))
    assert isinstance(mcc.get_metric(), float)
    mcc(logits, torch.tensor([0, 1, 7, -3]))
    with pytest.raises(ConfigurationError, match=r"2 gold label\(s\) outside 0..1"):
        mcc.get_metric()


def test_matthews_correlation_of_a_tagger_shaped_batch_matches_scikit_learn():
    # (batch, sequence, classes) predictions with a padding mask, as a tagger gives them.
    generator = torch.Generator().manual_seed(7)
    logits = torch.randn(3, 5, 4, generator=generator)
    gold = torch.randint(0, 4, (3, 5), generator=generator)
    mask = torch.arange(5).unsqueeze(0) < torch.tensor([[5], [2], [4]])
    mcc = MatthewsCorrelation()
    mcc(logits, gold, mask)
    expected = sklearn_metrics.matthews_corrcoef(gold[mask].tolist(), logits.argmax(-1)[mask])
    assert mcc.get_metric() == pytest.approx(expected, abs=1e-12)
