from allennlp_tune.data.tokenizers.spacy_rules import SpacyRulesTokenizer  # noqa: F401
