"""Per-layer pooled features: finding the transformer, pooling numerics, order, readers, layers."""

import numpy as np
import pytest
import torch
import transformers
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.models import Model

import allennlp_tune  # noqa: F401  (registers the readers)
from allennlp_tune.analysis.features import (
    Encoder,
    build_reader,
    extract_layer_features,
    find_transformer,
    load_pretrained_encoder,
    parse_layers,
)
from allennlp_tune.data.paths import FIXTURE_DATA_DIR, FIXTURE_MODELS_DIR

TINY_BERT = str(FIXTURE_MODELS_DIR / "bert-uncased")
SST2_DEV = str(FIXTURE_DATA_DIR / "sst-2" / "dev.tsv")


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    if not (FIXTURE_MODELS_DIR / "bert-uncased" / "config.json").is_file():
        pytest.skip("fixtures/models/bert-uncased is missing")
    return load_pretrained_encoder(TINY_BERT)


def manual_hidden_states(encoder: Encoder, tokens):
    ids = torch.tensor([[token.text_id for token in tokens]])
    types = torch.tensor([[token.type_id or 0 for token in tokens]])
    with torch.no_grad():
        outputs = encoder.model(input_ids=ids, token_type_ids=types, output_hidden_states=True)
    return [hidden[0].numpy() for hidden in outputs.hidden_states]


@pytest.mark.parametrize("pooling", ["mean", "max", "first"])
def test_pooled_vectors_match_an_unbatched_forward_pass(encoder, pooling):
    reader = build_reader("sst2", encoder.tokenizer_name)
    instances = list(reader.read(SST2_DEV))
    features = extract_layer_features(
        encoder, reader, SST2_DEV, layers=[0, 2, 4], pooling=pooling, batch_size=4
    )
    assert features.layers == [0, 2, 4] and len(features) == len(instances)
    assert not features.regression and set(features.labels) <= {"0", "1"}
    for row, instance in enumerate(instances):
        hidden = manual_hidden_states(encoder, instance["tokens"].tokens)
        for layer in (0, 2, 4):
            expected = {
                "mean": hidden[layer].mean(axis=0),
                "max": hidden[layer].max(axis=0),
                "first": hidden[layer][0],
            }[pooling]
            np.testing.assert_allclose(features.vectors[layer][row], expected, atol=1e-5)
        assert features.labels[row] == instance["label"].label


def test_batching_and_length_sorting_keep_file_order(encoder):
    reader = build_reader("sst2", encoder.tokenizer_name)
    one = extract_layer_features(encoder, reader, SST2_DEV, layers=[4], batch_size=1)
    many = extract_layer_features(encoder, reader, SST2_DEV, layers=[4], batch_size=3)
    np.testing.assert_allclose(one.vectors[4], many.vectors[4], atol=1e-5)
    assert one.labels == many.labels
    first_two = extract_layer_features(
        encoder, reader, SST2_DEV, layers=[4], batch_size=3, max_instances=2
    )
    np.testing.assert_allclose(first_two.vectors[4], one.vectors[4][:2], atol=1e-5)


def test_pair_readers_encode_jointly_and_scores_are_regression_labels(encoder):
    reader = build_reader('{"type": "sts_b"}', encoder.tokenizer_name)
    path = str(FIXTURE_DATA_DIR / "sts-b" / "sts-dev.csv")
    features = extract_layer_features(encoder, reader, path, layers=[0, 4])
    assert features.regression and all(isinstance(label, float) for label in features.labels)
    assert features.vectors[4].shape == (len(features), 16)
    instance = next(iter(reader.read(path)))
    type_ids = [token.type_id for token in instance["tokens"].tokens]
    assert type_ids[0] == 0 and type_ids[-1] == 1  # [CLS] a [SEP] b [SEP]


def test_find_transformer_in_an_allennlp_model():
    vocab = Vocabulary()
    vocab.add_tokens_to_namespace(["0", "1"], "labels")
    model = Model.from_params(
        vocab=vocab,
        params=Params(
            {
                "type": "basic_classifier",
                "text_field_embedder": {
                    "token_embedders": {
                        "tokens": {"type": "pretrained_transformer", "model_name": TINY_BERT}
                    }
                },
                "seq2vec_encoder": {"type": "cls_pooler", "embedding_dim": 16},
            }
        ),
    )
    found = find_transformer(model)
    assert isinstance(found, transformers.PreTrainedModel)
    embedder = model._text_field_embedder._token_embedders["tokens"]
    assert found is embedder.transformer_model
    with pytest.raises(ConfigurationError, match="No Hugging Face transformer"):
        find_transformer(torch.nn.Sequential(torch.nn.Linear(2, 2)))


def test_parse_layers():
    assert parse_layers("all", 5) == [0, 1, 2, 3, 4]
    assert parse_layers("0, -1", 5) == [0, 4]
    assert parse_layers("2-4,0", 5) == [0, 2, 3, 4]
    with pytest.raises(
        ConfigurationError, match="layer 7 does not exist; .* 0 \\(embeddings\\) to 4"
    ):
        parse_layers("7", 5)
    with pytest.raises(ConfigurationError, match="not a layer index or range"):
        parse_layers("top", 5)


def test_reader_errors(encoder):
    with pytest.raises(ConfigurationError, match="Unknown dataset reader 'sst'"):
        build_reader("sst", encoder.tokenizer_name)
    with pytest.raises(ConfigurationError, match="not valid JSON"):
        build_reader("{type: mrpc}", encoder.tokenizer_name)
    with pytest.raises(ConfigurationError, match="pair_encoding 'joint'"):
        build_reader('{"type": "mrpc", "pair_encoding": "separate"}', encoder.tokenizer_name)
    reader = build_reader("sst2", encoder.tokenizer_name)
    with pytest.raises(ConfigurationError, match="does not exist"):
        extract_layer_features(encoder, reader, "missing.tsv", layers=[0])
    with pytest.raises(ConfigurationError, match="--pooling 'sum'"):
        extract_layer_features(encoder, reader, SST2_DEV, layers=[0], pooling="sum")


def test_missing_pretrained_model_is_reported():
    with pytest.raises(ConfigurationError, match="Could not load the pretrained encoder"):
        load_pretrained_encoder("/nonexistent/model")
