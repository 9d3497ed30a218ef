"""The `static_shapes` collator: lengths in buckets, fixed rows, padding rows left out."""

import pytest
import torch
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Batch, Instance, Token, Vocabulary
from allennlp.data.data_loaders.data_collator import DataCollator
from allennlp.data.fields import LabelField, TensorField, TextField
from allennlp.data.token_indexers import SingleIdTokenIndexer
from allennlp.models import Model

SENTENCES = [
    ("a charming and funny film", "1"),
    ("the plot is thin and silly and far too long for what it says", "0"),
    ("two kids are playing", "1"),
]


def instances():
    indexers = {"tokens": SingleIdTokenIndexer()}
    return [
        Instance(
            {
                "tokens": TextField([Token(word) for word in text.split()], indexers),
                "label": LabelField(label),
            }
        )
        for text, label in SENTENCES
    ]


@pytest.fixture
def indexed():
    data = instances()
    vocab = Vocabulary.from_instances(data)
    for instance in data:
        instance.index_fields(vocab)
    return data, vocab


def collator(**options):
    return DataCollator.from_params(Params({"type": "static_shapes", **options}))


def test_lengths_go_up_to_a_multiple_of_8_or_a_bucket_and_rows_are_filled(indexed):
    data, _ = indexed
    tensors = collator(rows=4)(data)
    ids = tensors["tokens"]["tokens"]["tokens"]
    plain = Batch(data).as_tensor_dict()
    width = plain["tokens"]["tokens"]["tokens"].size(1)
    assert width == 14
    assert ids.shape == (4, 16)
    assert torch.equal(ids[:3, :width], plain["tokens"]["tokens"]["tokens"])
    assert not ids[:, width:].any()  # the added columns are padding
    assert torch.equal(ids[3], ids[0])  # the filling row copies the first one ...
    assert tensors["label"].tolist() == plain["label"].tolist() + [-100]  # ... ignored
    # Explicit buckets; past the largest, multiples of 8.
    assert collator(lengths=[12, 20, 32])(data)["tokens"]["tokens"]["tokens"].shape == (3, 20)
    assert collator(lengths=[4, 8])(data)["tokens"]["tokens"]["tokens"].shape == (3, 16)
    assert collator(multiple=1)(data)["tokens"]["tokens"]["tokens"].shape == (3, 14)


def test_padding_rows_change_neither_loss_nor_metrics(indexed):
    data, vocab = indexed
    torch.manual_seed(0)
    model = Model.from_params(
        vocab=vocab,
        params=Params(
            {
                "type": "pooled_classifier",
                "pooling": "mean",
                "text_field_embedder": {
                    "token_embedders": {"tokens": {"type": "embedding", "embedding_dim": 6}}
                },
            }
        ),
    ).eval()
    plain = model(**Batch(data).as_tensor_dict())
    plain_metrics = model.get_metrics(reset=True)
    static = model(**collator(rows=8)(data))
    assert static["logits"].shape[0] == 8
    torch.testing.assert_close(static["loss"], plain["loss"])
    assert model.get_metrics(reset=True) == plain_metrics


def test_a_batch_beyond_rows_and_score_labels_are_refused(indexed):
    data, _ = indexed
    with pytest.raises(ConfigurationError, match="a batch of 3 instances, more than rows = 2"):
        collator(rows=2)(data)
    scores = [Instance({"label": TensorField(torch.tensor(0.5))})]
    with pytest.raises(ConfigurationError, match="one class label per instance"):
        collator(rows=2)(scores)
