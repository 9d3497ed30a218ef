from typing import List

from allennlp.data.tokenizers import Token, Tokenizer


@Tokenizer.register("spacy_rules")
class SpacyRulesTokenizer(Tokenizer):
    """
    spaCy's rule-based tokenizer for a language (`spacy.blank(language)`): punctuation, clitics
    and special cases as in spaCy's statistical pipelines, but with no model to download, so it
    works on a machine that reaches only the package registries. AllenNLP's `spacy` tokenizer
    needs `en_core_web_sm` installed. This is the default tokenizer of allennlp-tune's readers.

    Registered as a `Tokenizer` with name "spacy_rules".

    ```jsonnet
    "tokenizer": {"type": "spacy_rules", "language": "en", "lowercase": false}
    ```

    # Parameters

    language : `str`, optional (default = `"en"`)
        A spaCy language code (`spacy.blank` accepts it without any model).
    lowercase : `bool`, optional (default = `False`)
        Lower-case every token's text.
    """

    def __init__(self, language: str = "en", lowercase: bool = False) -> None:
        import spacy

        self._language = language
        self._lowercase = lowercase
        self._nlp = spacy.blank(language)

    def tokenize(self, text: str) -> List[Token]:
        tokens = []
        for token in self._nlp.make_doc(text):
            if token.is_space:
                continue
            word = token.text.lower() if self._lowercase else token.text
            tokens.append(Token(word, idx=token.idx, idx_end=token.idx + len(token.text)))
        return tokens

    def _to_params(self):
        return {"type": "spacy_rules", "language": self._language, "lowercase": self._lowercase}
