import json
import re
import sys
from pathlib import Path

import pytest
from allennlp.commands import main
from allennlp.commands.train import train_model_from_file
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.models import Model
from allennlp.models.archival import load_archive
from allennlp.predictors import Predictor
from allennlp_models.tagging.models.crf_tagger import CrfTagger

import allennlp_tune  # noqa: F401
import allennlp_tune.models  # noqa: F401
import allennlp_tune.predictors  # noqa: F401
from allennlp_tune.data.paths import FIXTURE_DATA_DIR
from allennlp_tune.predictors import TuneSentenceTaggerPredictor, TuneTextClassifierPredictor

CONFIGS = Path(__file__).parents[1] / "fixtures_configs" / "models"


@pytest.fixture(scope="module")
def archives(tmp_path_factory):
    """Tiny word-embedding archives (one epoch each), trained once for this module."""
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setenv("TUNE_DATA_DIR", str(FIXTURE_DATA_DIR))
    root = tmp_path_factory.mktemp("archives")
    configs = {
        "pair": ("pair_classifier_words_mrpc_no_bi_attention.jsonnet", ""),
        "regression": ("pair_classifier_words_stsb.jsonnet", ""),
        "sentence": ("pooled_classifier_words_sst2.jsonnet", ""),
        "joint": ("pooled_classifier_bert_stsb_mean.jsonnet", ""),
        "bert_sentence": ("pooled_classifier_bert_sst2.jsonnet", ""),
        "bert_tagger": ("tune_tagger_bert_feature_extraction.jsonnet", ""),
        "tagger": ("crf_tagger_words.jsonnet", json.dumps({"model.type": "tune_crf_tagger"})),
    }
    paths = {}
    for name, (config, overrides) in configs.items():
        train_model_from_file(CONFIGS / config, root / name, overrides=overrides)
        paths[name] = root / name / "model.tar.gz"
    yield paths
    monkeypatch.undo()


def predictor(archives, name, predictor_name=None):
    return Predictor.from_archive(load_archive(archives[name]), predictor_name)


def test_pair_classifier_predicts_a_label_with_probabilities(archives):
    pairs = predictor(archives, "pair")
    assert isinstance(pairs, TuneTextClassifierPredictor)
    output = pairs.predict_json({"premise": "A man is playing", "hypothesis": "A man plays"})
    assert output["label"] in {"0", "1"}
    assert set(output["probabilities"]) == {"0", "1"}
    assert sum(output["probabilities"].values()) == pytest.approx(1.0)
    assert output["probabilities"][output["label"]] == max(output["probabilities"].values())
    # GLUE's key names give the same prediction.
    same = pairs.predict_json({"sentence1": "A man is playing", "sentence2": "A man plays"})
    assert same["probabilities"] == pytest.approx(output["probabilities"])


def test_regression_gives_one_float_per_pair(archives):
    outputs = predictor(archives, "regression").predict_batch_json(
        [
            {"premise": "A dog runs", "hypothesis": "A dog is running"},
            {"sentence1": "A cat", "sentence2": "The guitar is playing", "id": 7},
        ]
    )
    assert [set(output) for output in outputs] == [{"score"}, {"score"}]
    assert all(isinstance(output["score"], float) for output in outputs)


def test_jointly_encoded_bert_pair_gives_a_score(archives):
    joint = predictor(archives, "joint")
    output = joint.predict_json({"sentence1": "A dog runs", "sentence2": "A dog is running"})
    assert isinstance(output["score"], float) and "probabilities" not in output


def test_single_sentence_classifier(archives):
    sentences = predictor(archives, "sentence")
    output = sentences.predict_json({"sentence": "a charming and funny film"})
    assert output["label"] in {"0", "1"} and set(output["probabilities"]) == {"0", "1"}
    with pytest.raises(ConfigurationError, match="reads single sentences"):
        sentences.predict_json({"premise": "a", "hypothesis": "b"})


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"premise": "A man"', r"input line 1 .* is not valid JSON"),
        ('["A man", "A woman"]', r"a JSON array, not an object"),
        ('{"sentence": "A man"}', r"missing keys \(found 'sentence'\).*sentence pairs"),
        ('{"premise": "A man", "hypothesis": 3}', r"'hypothesis' is a JSON number"),
        ('{"sentence1": "A man", "sentence2": "  "}', r"'sentence2' is empty"),
    ],
)
def test_bad_pair_lines_name_the_line_and_the_keys(archives, line, message):
    pairs = predictor(archives, "pair")
    with pytest.raises(ConfigurationError, match=message):
        pairs.load_line(line)


def test_tagger_reads_tokens_or_a_sentence(archives):
    tagger = predictor(archives, "tagger")
    assert isinstance(tagger, TuneSentenceTaggerPredictor)
    tokens = ["Peter", "Blackburn", "talks", "in", "New", "York", "."]
    output = tagger.predict_json({"tokens": tokens})
    assert output["words"] == tokens and len(output["tags"]) == len(tokens)
    assert all(tag == "O" or tag[:2] in ("B-", "I-") for tag in output["tags"])
    output = tagger.predict_json({"sentence": "Peter Blackburn talks in New York."})
    assert output["words"] == tokens
    # Batches of different lengths: each sentence still gets exactly one tag per word.
    outputs = tagger.predict_batch_json([{"tokens": tokens[:2]}, {"tokens": tokens}])
    assert [len(output["tags"]) for output in outputs] == [2, 7]
    with pytest.raises(ConfigurationError, match=r"token 2 \(3\) is not a non-empty string"):
        tagger.load_line('{"tokens": ["Peter", 3]}')
    with pytest.raises(ConfigurationError, match="non-empty JSON array"):
        tagger.load_line('{"tokens": "Peter Blackburn"}')


def test_upstream_crf_tagger_works_with_our_predictor(archives, monkeypatch):
    # allennlp-models' crf_tagger defaults to `sentence_tagger`, which needs a spaCy model;
    # `--predictor tune_sentence_tagger` does not. (An untrained crf_tagger on the archive's
    # vocabulary and reader: only the predictor is under test.)
    monkeypatch.setenv("TUNE_DATA_DIR", str(FIXTURE_DATA_DIR))
    archive = load_archive(archives["tagger"])
    params = Params.from_file(CONFIGS / "crf_tagger_words.jsonnet")["model"]
    model = Model.from_params(vocab=archive.model.vocab, params=params)
    assert type(model) is CrfTagger
    tagger = Predictor.by_name("tune_sentence_tagger")(model, archive.dataset_reader)
    assert len(tagger.predict_json({"tokens": ["EU", "rejects", "German", "call"]})["tags"]) == 4


def test_allennlp_predict_and_evaluate_commands(archives, tmp_path, monkeypatch, capsys):
    inputs = tmp_path / "pairs.jsonl"
    inputs.write_text(
        '{"premise": "A man is playing", "hypothesis": "A man plays"}\n'
        "\n"
        '{"sentence1": "A cat sleeps", "sentence2": "The dog is riding a ball"}\n'
    )
    output = tmp_path / "predictions.jsonl"
    # allennlp_tune is imported above; importing every module of allennlp and allennlp-models
    # as `main` does would only cost time here (tests/test_plugin.py covers plugin loading).
    monkeypatch.setattr("allennlp.commands.import_plugins", lambda: None)
    argv = ["allennlp", "predict", str(archives["pair"]), str(inputs)]
    monkeypatch.setattr(sys, "argv", argv + ["--output-file", str(output), "--silent"])
    main()
    predictions = [json.loads(line) for line in output.read_text().splitlines()]
    assert len(predictions) == 2 and all("probabilities" in p for p in predictions)

    inputs.write_text(inputs.read_text() + '{"premise": "A woman"}\n')
    with pytest.raises(ConfigurationError, match=r"input line 3 .*missing keys"):
        main()

    metrics_file = tmp_path / "metrics.json"
    data = FIXTURE_DATA_DIR / "sts-b" / "sts-dev.csv"
    argv = ["allennlp", "evaluate", str(archives["regression"]), str(data)]
    monkeypatch.setattr(sys, "argv", argv + ["--output-file", str(metrics_file)])
    main()
    metrics = json.loads(metrics_file.read_text())
    assert {"pearson", "spearman", "mse", "loss"} <= set(metrics)


LONG_TEXT = " ".join(["a", "man", "is", "playing"] * 5000)  # 20,000 words


def test_an_input_longer_than_the_transformer_names_its_line_and_the_fix(
    archives, tmp_path, monkeypatch
):
    inputs = tmp_path / "pairs.jsonl"
    lines = [
        {"sentence1": "A dog runs", "sentence2": "A dog is running"},
        {"sentence1": LONG_TEXT, "sentence2": "A man plays"},
    ]
    inputs.write_text("\n\n".join(json.dumps(line) for line in lines) + "\n")
    output = tmp_path / "predictions.jsonl"
    monkeypatch.setattr("allennlp.commands.import_plugins", lambda: None)
    argv = ["allennlp", "predict", str(archives["joint"]), str(inputs), "--silent"]
    monkeypatch.setattr(sys, "argv", argv + ["--output-file", str(output)])
    with pytest.raises(ConfigurationError) as error:
        main()
    message = str(error.value)
    assert message.startswith("input line 2 (blank lines not counted), {")
    length = re.search(r"the pair, encoded jointly, is (\d+) wordpieces long", message)
    assert length is not None and int(length.group(1)) > 20000, message
    assert "more than the 64 positions" in message
    # The advice works: the overrides it gives fold the long input.
    overrides = re.search(r"--overrides '(\{.*\})'", message).group(1)
    assert json.loads(overrides) == {
        "dataset_reader.token_indexers.tokens.max_length": 64,
        "model.text_field_embedder.token_embedders.tokens.max_length": 64,
    }
    monkeypatch.setattr(sys, "argv", argv + ["--output-file", str(output), "-o", overrides])
    main()
    predictions = [json.loads(line) for line in output.read_text().splitlines()]
    assert len(predictions) == 2 and all(isinstance(p["score"], float) for p in predictions)


@pytest.mark.parametrize(
    "name, line, what",
    [
        ("bert_sentence", {"sentence": LONG_TEXT}, "'sentence' is"),
        ("bert_tagger", {"tokens": LONG_TEXT.split()}, "the sentence is"),
        ("bert_tagger", {"sentence": LONG_TEXT}, "the sentence is"),
    ],
)
def test_long_single_sentences_name_the_line(archives, name, line, what):
    model = predictor(archives, name)
    model.load_line(
        json.dumps({key: "a man".split() if key == "tokens" else "a man" for key in line})
    )
    with pytest.raises(ConfigurationError) as error:
        model.load_line(json.dumps(line))
    message = str(error.value)
    assert message.startswith("input line 2 (blank lines not counted), {")
    assert re.search(
        f"\\.\\.\\.: {what} 2000[0-9] wordpieces long, more than the 64 positions", message
    ), message


def test_word_level_models_take_long_inputs(archives):
    pairs = predictor(archives, "pair")
    line = json.dumps({"premise": LONG_TEXT, "hypothesis": "A man plays"})
    assert pairs.load_line(line)["premise"] == LONG_TEXT


@pytest.mark.parametrize(
    "name, line, message",
    [
        ("pair", {"premise": "\u200b\u200b", "hypothesis": "A man"}, "'premise' is empty"),
        ("joint", {"sentence1": "A man", "sentence2": " \u200d\ufeff "}, "'sentence2' is empty"),
        ("sentence", {"sentence": "\u2060\u200b"}, "'sentence' is empty"),
        ("tagger", {"tokens": ["Peter", "\u200b"]}, "token 2 ('\\u200b') is not a non-empty"),
    ],
)
def test_zero_width_texts_are_empty(archives, name, line, message):
    with pytest.raises(ConfigurationError) as error:
        predictor(archives, name).load_line(json.dumps(line))
    assert str(error.value).startswith("input line 1 (blank lines not counted)")
    assert message in str(error.value)
    assert "(only whitespace and zero-width characters)" in str(error.value)
