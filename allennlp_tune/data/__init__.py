from allennlp_tune.data import dataset_readers, tokenizers  # noqa: F401
