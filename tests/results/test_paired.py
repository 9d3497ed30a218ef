"""The paired bootstrap on synthetic predictions whose answer is known."""

import json
import time

import numpy as np
import pytest
import torch
from allennlp.data import Vocabulary
from allennlp.training.metrics import SpanBasedF1Measure
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics import accuracy_score, f1_score, matthews_corrcoef

from allennlp_tune.reporting.paired import TIE, compare_modes, describe_test, paired_bootstrap
from allennlp_tune.reporting.predictions import Predictions, PredictionsMismatch, read_predictions
from allennlp_tune.reporting.scorers import metric_values, sentence_span_counts

LABELS = ["entailment", "neutral", "contradiction"]


def classification_run(gold, correct, rng, source="run"):
    """Predictions that are right exactly where `correct` is true (wrong: another label)."""
    predicted = [
        g if ok else LABELS[(LABELS.index(g) + 1 + rng.integers(0, 2)) % 3]
        for g, ok in zip(gold, correct)
    ]
    return Predictions(list(gold), predicted, source)


def paired_models(n, accuracy_a, accuracy_b, disagreement, rng, seeds=1, seed_noise=0):
    """
    Two modes' runs on n examples: A right on accuracy_a * n, B on accuracy_b * n, the two
    disagreeing on `disagreement` * n examples (realistic: models mostly err together). Each
    seed moves its mode's accuracy by up to `seed_noise` examples (uniform, either way).
    """
    gold = [LABELS[k] for k in rng.integers(0, 3, n)]
    a_only = round((disagreement + accuracy_a - accuracy_b) / 2 * n)
    b_only = round((disagreement - accuracy_a + accuracy_b) / 2 * n)
    both = round(accuracy_b * n) - b_only
    kinds = np.array(["both"] * both + ["a"] * a_only + ["b"] * b_only)
    kinds = np.concatenate([kinds, ["none"] * (n - len(kinds))])
    rng.shuffle(kinds)
    base_a = np.isin(kinds, ["both", "a"])
    base_b = np.isin(kinds, ["both", "b"])

    def runs(base, name):
        out = []
        for seed in range(seeds):
            correct = base.copy()
            shift = int(rng.integers(-seed_noise, seed_noise + 1)) if seed_noise else 0
            if shift:
                pool = np.flatnonzero(correct == (shift < 0))
                correct[rng.choice(pool, abs(shift), replace=False)] = shift > 0
            out.append(classification_run(gold, correct, rng, f"{name}/seed_{seed}"))
        return out

    return runs(base_a, "a"), runs(base_b, "b")


def test_identical_models_tie_with_a_zero_width_interval():
    rng = np.random.default_rng(1)
    runs_a, _ = paired_models(1000, 0.85, 0.83, 0.1, rng, seeds=1)
    result = paired_bootstrap(runs_a, runs_a, "accuracy", names=("ft", "fe"))
    assert result.verdict == TIE
    assert result.difference == 0.0
    assert result.low <= 0.0 <= result.high
    assert result.width < 1e-9
    assert result.score_a == pytest.approx(85.0)


def test_identical_modes_with_several_seeds_tie():
    rng = np.random.default_rng(2)
    runs, _ = paired_models(1000, 0.85, 0.83, 0.1, rng, seeds=3, seed_noise=10)
    result = paired_bootstrap(runs, list(runs), "accuracy", names=("ft", "fe"))
    assert result.verdict == TIE
    assert result.difference == pytest.approx(0.0)
    assert result.low < 0.0 < result.high
    assert result.width < 3.0  # only the seeds' spread (±1 point each) is left


def test_a_model_better_on_every_example_wins():
    rng = np.random.default_rng(3)
    gold = [LABELS[k] for k in rng.integers(0, 3, 200)]
    right = classification_run(gold, np.ones(200, bool), rng, "right")
    wrong = classification_run(gold, np.zeros(200, bool), rng, "wrong")
    result = paired_bootstrap([wrong], [right], "accuracy", names=("fe", "ft"))
    assert result.verdict == "ft"
    assert result.difference == -100.0
    assert result.high < 0
    for metric in ("mcc",):
        assert paired_bootstrap([right], [wrong], metric, names=("ft", "fe")).verdict == "ft"


def test_two_points_win_at_2000_examples_and_tie_at_100():
    rng = np.random.default_rng(4)
    large = paired_models(2000, 0.85, 0.83, 0.10, rng, seeds=3, seed_noise=4)
    result = paired_bootstrap(*large, "accuracy", names=("ft", "fe"))
    assert result.difference == pytest.approx(2.0, abs=0.3)
    assert result.verdict == "ft", result
    assert 0 < result.low < result.difference < result.high < 4.0

    small = paired_models(100, 0.85, 0.83, 0.10, rng, seeds=3)
    result = paired_bootstrap(*small, "accuracy", names=("ft", "fe"))
    assert result.difference == pytest.approx(2.0)
    assert result.verdict == TIE
    assert result.low < 0 < result.high


def test_the_interval_narrows_as_one_over_sqrt_n():
    widths = {}
    for n in (500, 2000, 8000):
        rng = np.random.default_rng(5)
        runs = paired_models(n, 0.80, 0.80, 0.12, rng)
        widths[n] = paired_bootstrap(*runs, "accuracy", replicates=2000).width
    # 4x the examples, half the width (sampling noise of the interval ends: a few %).
    assert widths[500] / widths[2000] == pytest.approx(2.0, rel=0.15)
    assert widths[2000] / widths[8000] == pytest.approx(2.0, rel=0.15)


def test_seed_variance_widens_the_interval():
    rng = np.random.default_rng(6)
    steady = paired_models(1000, 0.85, 0.83, 0.10, rng, seeds=5, seed_noise=0)
    rng = np.random.default_rng(6)
    shaky = paired_models(1000, 0.85, 0.83, 0.10, rng, seeds=5, seed_noise=30)
    steady_width = paired_bootstrap(*steady, "accuracy").width
    shaky_width = paired_bootstrap(*shaky, "accuracy").width
    assert shaky_width > 1.2 * steady_width
    # Averaging over fixed seeds instead of resampling them hides most of that spread.
    fixed = paired_bootstrap(*shaky, "accuracy", resample_seeds=False).width
    assert fixed < shaky_width


def test_results_are_reproducible_and_pairs_share_resamples():
    rng = np.random.default_rng(7)
    a, b = paired_models(500, 0.8, 0.78, 0.1, rng, seeds=2, seed_noise=3)
    first = compare_modes({"fe": b, "ft": a, "sf": a}, "accuracy", seed=3)
    again = compare_modes({"fe": b, "ft": a, "sf": a}, "accuracy", seed=3)
    assert first == again
    assert [(r.mode_a, r.mode_b) for r in first] == [("fe", "ft"), ("fe", "sf"), ("ft", "sf")]
    only = compare_modes({"fe": b, "ft": a}, "accuracy", pairs=[("ft", "fe")])
    assert len(only) == 1
    assert only[0].difference == pytest.approx(only[0].score_a - only[0].score_b)
    assert only[0].difference == pytest.approx(-first[0].difference)
    assert "tie" in describe_test() and "2000 replicates" in describe_test()
    assert only[0].text().startswith(f"{only[0].difference:+.1f} [")


# Full-sample values equal the libraries' -----------------------------------------------------


def test_classification_metrics_equal_sklearn():
    rng = np.random.default_rng(8)
    gold = [LABELS[k] for k in rng.integers(0, 3, 700)]
    runs = [classification_run(gold, rng.random(700) < p, rng, f"s{p}") for p in (0.6, 0.8)]
    for run in runs:
        (accuracy,) = metric_values([run], "accuracy")
        assert accuracy == pytest.approx(100 * accuracy_score(run.golds, run.predictions))
        (mcc,) = metric_values([run], "mcc")
        assert mcc == pytest.approx(100 * matthews_corrcoef(run.golds, run.predictions))
        (f1,) = metric_values([run], "+f1", positive_label="neutral")
        expected = f1_score(run.golds, run.predictions, labels=["neutral"], average=None)[0]
        assert f1 == pytest.approx(100 * expected)
    constant = Predictions(gold, ["neutral"] * 700, "constant")
    assert metric_values([constant], "mcc") == [0.0]  # undefined: 0, as the models report it
    with pytest.raises(ValueError, match="positive_label"):
        metric_values([constant], "f1")
    with pytest.raises(ValueError, match="not a label"):
        metric_values([constant], "f1", positive_label="1")


def test_correlations_equal_scipy_with_ties():
    rng = np.random.default_rng(9)
    gold = list(np.round(rng.uniform(0, 5, 600), 1))  # STS-B-like scores, many ties
    for predicted in (
        list(np.array(gold) + rng.normal(0, 1, 600)),
        list(np.round(np.array(gold) + rng.normal(0, 1, 600))),  # ties in the predictions too
    ):
        run = Predictions(gold, predicted, "sts")
        assert metric_values([run], "pearson")[0] == pytest.approx(
            100 * pearsonr(predicted, gold)[0], abs=1e-9
        )
        assert metric_values([run], "spearman")[0] == pytest.approx(
            100 * spearmanr(predicted, gold)[0], abs=1e-9
        )
    constant = Predictions(gold, [2.5] * 600, "constant")
    assert metric_values([constant], "pearson") == [0.0]
    assert metric_values([constant], "spearman") == [0.0]


def test_resampled_spearman_equals_scipy_on_the_resample():
    """The bootstrap's midranks of a weighted resample are scipy's ranks of that resample."""
    from allennlp_tune.reporting.scorers import _spearman_scorer

    rng = np.random.default_rng(10)
    gold = np.round(rng.uniform(0, 5, 300), 1)
    predicted = [np.round(gold + rng.normal(0, 1, 300), 1), gold + rng.normal(0, 1, 300)]
    runs = [Predictions(list(gold), list(p), f"s{k}") for k, p in enumerate(predicted)]
    scorer = _spearman_scorer(runs)
    picks = rng.integers(0, 300, size=(4, 300))
    weights = np.stack([np.bincount(p, minlength=300) for p in picks]).astype(float)
    values = scorer(weights)
    for b, pick in enumerate(picks):
        for s, p in enumerate(predicted):
            assert values[s, b] == pytest.approx(spearmanr(p[pick], gold[pick])[0], abs=1e-9)


TYPES = ("PER", "LOC", "ORG")


def random_spans(rng, length):
    spans, position = [], 0
    while position < length:
        if rng.random() < 0.3:
            size = int(min(rng.integers(1, 4), length - position))
            spans.append((TYPES[rng.integers(0, 3)], position, position + size - 1))
            position += size
        position += 1
    return spans


def encode(spans, length, encoding):
    tags = ["O"] * length
    for label, start, end in spans:
        for k in range(start, end + 1):
            if encoding == "BIOUL":
                prefix = "U" if start == end else "B" if k == start else "L" if k == end else "I"
            else:
                prefix = "B" if k == start else "I"
            tags[k] = f"{prefix}-{label}"
    return tags


def tagging_runs(rng, sentences, encoding, noise, count):
    lengths = rng.integers(1, 25, sentences)
    gold_spans = [random_spans(rng, length) for length in lengths]
    golds = [encode(spans, length, encoding) for spans, length in zip(gold_spans, lengths)]
    runs = []
    for k in range(count):
        predicted = []
        for spans, length in zip(gold_spans, lengths):
            kept = [
                (TYPES[rng.integers(0, 3)], s, e) if rng.random() < noise / 2 else (t, s, e)
                for t, s, e in spans
                if rng.random() > noise / 2
            ]
            predicted.append(encode(kept, length, encoding))
        runs.append(Predictions(golds, predicted, f"{encoding}/seed_{k}"))
    return runs


def allennlp_span_f1(run, encoding):
    tags = sorted({tag for tags in run.golds + run.predictions for tag in tags})
    vocab = Vocabulary()
    for tag in tags:
        vocab.add_token_to_namespace(tag, "labels")
    metric = SpanBasedF1Measure(vocab, "labels", label_encoding=encoding)
    longest = max(len(tags) for tags in run.golds)
    gold_ids = torch.zeros(len(run.golds), longest, dtype=torch.long)
    scores = torch.zeros(len(run.golds), longest, vocab.get_vocab_size("labels"))
    mask = torch.zeros(len(run.golds), longest, dtype=torch.bool)
    for i, (gold, predicted) in enumerate(zip(run.golds, run.predictions)):
        for j, (g, p) in enumerate(zip(gold, predicted)):
            gold_ids[i, j] = vocab.get_token_index(g, "labels")
            scores[i, j, vocab.get_token_index(p, "labels")] = 1.0
            mask[i, j] = True
    metric(scores, gold_ids, mask)
    return metric.get_metric()["f1-measure-overall"]


@pytest.mark.parametrize("encoding", ["BIO", "BIOUL"])
def test_span_f1_equals_allennlp_span_based_f1(encoding):
    rng = np.random.default_rng(11)
    runs = tagging_runs(rng, 300, encoding, noise=0.3, count=2)
    values = metric_values(runs, "f1-measure-overall")  # the encoding is guessed
    for run, value in zip(runs, values):
        assert value == pytest.approx(100 * allennlp_span_f1(run, encoding), abs=1e-8)
    assert metric_values(runs, "f1-measure-overall", tag_encoding=encoding) == values


def test_span_f1_better_tagger_wins_and_counts_are_per_sentence():
    rng = np.random.default_rng(12)
    good = tagging_runs(rng, 1500, "BIO", noise=0.1, count=3)
    rng = np.random.default_rng(12)
    bad = tagging_runs(rng, 1500, "BIO", noise=0.3, count=3)
    result = paired_bootstrap(good, bad, "f1-measure-overall", names=("fe", "ft"))
    assert result.verdict == "fe" and result.low > 0
    counts = sentence_span_counts(good[0].golds, good[0].predictions)
    assert counts.shape == (1500, 3)
    assert (counts[:, 0] <= counts[:, 1:].min(axis=1)).all()
    with pytest.raises(PredictionsMismatch, match="predicted tags for"):
        sentence_span_counts([["O", "B-PER"]], [["O"]])
    with pytest.raises(PredictionsMismatch, match="not valid BIOUL"):
        sentence_span_counts([["U-PER"]], [["B-PER"]], "BIOUL")


# Files and mismatches ------------------------------------------------------------------------


def write_predictions(path, golds, predictions):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        for index, (gold, prediction) in enumerate(zip(golds, predictions)):
            handle.write(json.dumps({"index": index, "gold": gold, "prediction": prediction}))
            handle.write("\n")
    return path


def test_files_are_read_and_mismatched_golds_name_both_files(tmp_path):
    fe = write_predictions(tmp_path / "fe/seed_1/dev_predictions.jsonl", ["a", "b", "a"],
                           ["a", "a", "a"])  # fmt: skip
    ft = write_predictions(tmp_path / "ft/seed_1/dev_predictions.jsonl", ["a", "b", "a"],
                           ["a", "b", "b"])  # fmt: skip
    assert read_predictions(fe).golds == ["a", "b", "a"]
    result = paired_bootstrap([ft], [fe], "accuracy", names=("ft", "fe"), replicates=50)
    assert result.difference == pytest.approx(0.0)
    other = write_predictions(tmp_path / "sf/seed_1/dev_predictions.jsonl", ["a", "a", "a"],
                              ["a", "a", "a"])  # fmt: skip
    with pytest.raises(PredictionsMismatch) as error:
        paired_bootstrap([fe], [other], "accuracy")
    assert str(other) in str(error.value) and str(fe) in str(error.value)
    assert "example 1" in str(error.value)
    short = write_predictions(tmp_path / "short.jsonl", ["a", "b"], ["a", "b"])
    with pytest.raises(PredictionsMismatch, match="2 examples"):
        paired_bootstrap([fe], [short], "accuracy")
    shuffled = tmp_path / "shuffled.jsonl"
    shuffled.write_text('{"index": 1, "gold": "a", "prediction": "a"}\n')
    with pytest.raises(PredictionsMismatch, match="input order"):
        read_predictions(shuffled)
    with pytest.raises(ValueError, match="paired bootstrap knows"):
        paired_bootstrap([fe], [ft], "loss")


def test_ten_thousand_examples_five_seeds_five_modes_is_fast():
    rng = np.random.default_rng(13)
    n = 10_000
    gold = rng.integers(0, 3, n)
    golds = [LABELS[k] for k in gold]
    by_mode = {}
    for mode in ("fe", "ft", "sf", "bitfit", "lora"):
        by_mode[mode] = [
            Predictions(golds, [LABELS[k] for k in np.where(rng.random(n) < 0.8, gold, 0)], mode)
            for _ in range(5)
        ]
    start = time.perf_counter()
    results = compare_modes(by_mode, "accuracy", replicates=2000)
    elapsed = time.perf_counter() - start
    assert len(results) == 10
    assert elapsed < 20  # about 1 s on an idle core; generous for a busy shared machine
