from allennlp_tune.data import data_collators, dataset_readers, tokenizers  # noqa: F401
