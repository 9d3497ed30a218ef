"""Fixes 5 to 9: what AllenNLP 2.10.1 expects of huggingface_hub, transformers and nltk and newer
releases no longer have, each applied to its module just after the module's own code runs (or
around it: fix 9). Every fix is a no-op where the stack still has what AllenNLP expects
(transformers 4.20 of a stock AllenNLP install, the locked 4.43.4). The fixes themselves are
described in `allennlp_tune/compat.py` and docs/COMPATIBILITY.md."""

import sys

_NLTK_NOTICE = (
    "nltk data %r is not installed and could not be downloaded (%s); allennlp-models' "
    "narrativeqa tools (and any other user of it) will fail until it is: "
    "python -m nltk.downloader %s"
)


# ---- 5. huggingface_hub >= 1.0: HfFolder and Repository -----------------------------------------


def _patch_huggingface_hub(hub) -> None:
    """`allennlp.common.push_to_hf` (imported by `allennlp.common`, hence by everything) does
    `from huggingface_hub import HfApi, HfFolder, Repository`; huggingface_hub 1.0 removed
    `HfFolder` and `Repository` (the git-based repository class), so `import allennlp.commands`
    fails. We add a small `HfFolder` (the token helpers) and a `Repository` that explains, when
    used, that `allennlp push-to-hf` cannot work here. (It does not work on huggingface_hub 0.36
    of requirements/lock.txt either: it calls `HfApi.create_repo(name=, organization=)`, which
    huggingface_hub removed long before 1.0.)"""
    if not hasattr(hub, "HfFolder"):

        class HfFolder:
            """huggingface_hub < 1.0's token helper, on top of `huggingface_hub.get_token`."""

            @staticmethod
            def get_token():
                return hub.get_token()

            @staticmethod
            def save_token(token: str) -> None:
                hub.login(token=token, add_to_git_credential=False)

            @staticmethod
            def delete_token() -> None:
                hub.logout()

        HfFolder._allennlp_tune_shim = True
        hub.HfFolder = HfFolder
    if not hasattr(hub, "Repository"):

        class Repository:
            """Stands in for huggingface_hub < 1.0's git-based `Repository`."""

            _allennlp_tune_shim = True

            def __init__(self, *args, **kwargs):
                raise RuntimeError(
                    f"huggingface_hub {getattr(hub, '__version__', '?')} has no `Repository` "
                    "(removed in 1.0), which `allennlp push-to-hf` uses. Upload the "
                    "serialization directory with `hf upload <repo_id> <serialization_dir>` "
                    "instead."
                )

        hub.Repository = Repository


# ---- 6. transformers >= 4.50 (5.x): transformers.AdamW ------------------------------------------


def _patch_transformers(transformers) -> None:
    """`allennlp.training.optimizers` subclasses `transformers.AdamW` at import (its
    `huggingface_adamw` optimizer), and every `allennlp` command imports it; transformers 5
    removed the class (deprecated since 4.x in favour of `torch.optim.AdamW`). We put back
    `transformers.AdamW` as `torch.optim.AdamW` that accepts `correct_bias=True` (the only value
    it can honour) and `no_deprecation_warning`, as the old class did."""
    if "AdamW" in dir(transformers):  # a lazy module: `dir` lists what it can import
        return
    import torch

    class AdamW(torch.optim.AdamW):
        """transformers < 5's `AdamW` signature on `torch.optim.AdamW` (allennlp-tune shim)."""

        _allennlp_tune_shim = True

        def __init__(
            self,
            params,
            lr: float = 1e-3,
            betas=(0.9, 0.999),
            eps: float = 1e-6,
            weight_decay: float = 0.0,
            correct_bias: bool = True,
            no_deprecation_warning: bool = False,
        ):
            if not correct_bias:
                raise ValueError(
                    "correct_bias=False (Adam without bias correction) went with "
                    "transformers.AdamW, which transformers 5 removed; torch.optim.AdamW always "
                    "corrects the bias. Drop correct_bias or use transformers < 5."
                )
            super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)

    AdamW.__module__ = "transformers.optimization"
    transformers.AdamW = AdamW
    # transformers 5 executes its `__init__` a second time (`direct_transformers_import`, from
    # `processing_utils`), which puts a new lazy module in `sys.modules`: answer `AdamW` from the
    # lazy module class itself, for every instance named "transformers".
    lazy_class = type(transformers)
    if lazy_class is not type(sys) and not getattr(lazy_class, "_allennlp_tune_adamw", False):
        lazy_getattr = lazy_class.__getattr__

        def __getattr__(self, name):
            if name == "AdamW" and self.__name__ == "transformers":
                return AdamW
            return lazy_getattr(self, name)

        lazy_class.__getattr__ = __getattr__
        lazy_class._allennlp_tune_adamw = True
    optimization = sys.modules.get("transformers.optimization")
    if optimization is not None and not hasattr(optimization, "AdamW"):
        optimization.AdamW = AdamW


# ---- 7. transformers >= 4.44: `add_special_tokens` at tokenizer construction ---------------


def _patch_cached_transformers(cached_transformers) -> None:
    """AllenNLP's `PretrainedTransformerTokenizer` builds its tokenizers with
    `cached_transformers.get_tokenizer(name, add_special_tokens=False / True)`, which passes the
    flag to `AutoTokenizer.from_pretrained`. Before transformers 4.44 it was stored and ignored;
    since then the tokenizer refuses it ("add_special_tokens conflicts with the method
    add_special_tokens in BertTokenizer"), so every reader with a transformer tokenizer fails.
    AllenNLP passes the flag explicitly wherever it encodes, so we drop it from the
    construction (the cache key keeps it, as before)."""
    original = cached_transformers.get_tokenizer
    if getattr(original, "_allennlp_tune_shim", False):
        return

    def get_tokenizer(model_name: str, **kwargs):
        from allennlp.common.util import hash_object

        cache_key = (model_name, hash_object(kwargs))
        tokenizer = cached_transformers._tokenizer_cache.get(cache_key)
        if tokenizer is None:
            construct = {k: v for k, v in kwargs.items() if k != "add_special_tokens"}
            tokenizer = cached_transformers.transformers.AutoTokenizer.from_pretrained(
                model_name, **construct
            )
            cached_transformers._tokenizer_cache[cache_key] = tokenizer
        return tokenizer

    get_tokenizer.__doc__ = original.__doc__
    get_tokenizer._allennlp_tune_shim = True
    cached_transformers.get_tokenizer = get_tokenizer


# ---- 8. transformers 5: `encode_plus`, `batch_encode_plus`, `build_inputs_with_special_tokens` --


def _patch_tokenization_utils_base(module) -> None:
    """AllenNLP's `PretrainedTransformerTokenizer` (and allennlp-models' readers) call
    `tokenizer.encode_plus(...)`, which transformers 5 removed (it was `__call__` for one text
    or one pair since transformers 3); `batch_encode_plus` went too, and the tokenizers backed
    by `tokenizers` (all the fast ones) lost `build_inputs_with_special_tokens`, which
    AllenNLP's `PretrainedTransformerIndexer` calls to fold inputs longer than `max_length`.
    We add them back to `PreTrainedTokenizerBase` (tokenizer classes that still define them
    keep their own)."""
    base = getattr(module, "PreTrainedTokenizerBase", None)
    if base is None:
        return
    if not hasattr(base, "encode_plus"):

        def encode_plus(self, text, text_pair=None, **kwargs):
            """transformers < 5's `encode_plus`: `self(text, text_pair, **kwargs)`."""
            return self(text, text_pair, **kwargs)

        encode_plus._allennlp_tune_shim = True
        base.encode_plus = encode_plus
    if not hasattr(base, "batch_encode_plus"):

        def batch_encode_plus(self, batch_text_or_text_pairs, **kwargs):
            """transformers < 5's `batch_encode_plus`: `self(texts or pairs, **kwargs)`."""
            texts = list(batch_text_or_text_pairs)
            if texts and isinstance(texts[0], (tuple, list)) and len(texts[0]) == 2:
                if not kwargs.get("is_split_into_words"):
                    firsts, seconds = zip(*texts)
                    return self(list(firsts), list(seconds), **kwargs)
            return self(texts, **kwargs)

        batch_encode_plus._allennlp_tune_shim = True
        base.batch_encode_plus = batch_encode_plus
    if not hasattr(base, "build_inputs_with_special_tokens"):

        def build_inputs_with_special_tokens(self, token_ids_0, token_ids_1=None):
            """transformers < 5's `build_inputs_with_special_tokens` for the tokenizers that
            lost it (those backed by `tokenizers`): the special tokens that the backend's
            post-processor puts before, between and after the sequences (allennlp-tune shim)."""
            backend = getattr(self, "backend_tokenizer", None)
            if backend is None:
                raise NotImplementedError(
                    f"{type(self).__name__} has no build_inputs_with_special_tokens"
                )
            if token_ids_1 is None:
                encoding = backend.encode("a", add_special_tokens=True)
            else:
                encoding = backend.encode("a", "b", add_special_tokens=True)
            parts = [[], [], []]  # before sequence 0, between, after sequence 1 (or 0)
            seen = -1
            for token_id, special, sequence in zip(
                encoding.ids, encoding.special_tokens_mask, encoding.sequence_ids
            ):
                if special or sequence is None:
                    parts[_part(seen, token_ids_1 is not None)].append(token_id)
                else:
                    seen = sequence
            before, between, after = parts
            if token_ids_1 is None:
                return before + list(token_ids_0) + after
            return before + list(token_ids_0) + between + list(token_ids_1) + after

        build_inputs_with_special_tokens._allennlp_tune_shim = True
        base.build_inputs_with_special_tokens = build_inputs_with_special_tokens


def _part(seen: int, pair: bool) -> int:
    """Which of before / between / after a special token is in, given the last sequence seen."""
    if seen < 0:
        return 0
    if pair and seen == 0:
        return 1
    return 2


# ---- 9. nltk.download at import: `[nltk_data] Error loading ...` lines offline -----------------


class _QuietNltkDownload:
    """During the import of allennlp-models' `rc/tools/narrativeqa.py`, which calls
    `nltk.download("punkt")` / `("wordnet")` at import when the data is missing: offline, each
    call prints `[nltk_data] Error loading ...` lines (even with `quiet=True`) on every
    `allennlp` command, because `allennlp` imports every allennlp-models module at start-up.
    We make the calls quiet and, when one fails, log it once through the logging module
    (at DEBUG: the data is needed only by that module's functions, which then fail on their own
    with nltk's message). Online, the data is still downloaded, as before."""

    def __enter__(self):
        try:
            import nltk
        except ImportError:
            self._nltk = None
            return self
        self._nltk = nltk
        self._original = nltk.download

        def download(info_or_id=None, *args, **kwargs):
            import contextlib
            import io
            import logging

            printed = io.StringIO()
            kwargs.update(quiet=True, print_error_to=printed)
            with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
                done = self._original(info_or_id, *args, **kwargs)
            if not done:
                text = " ".join(printed.getvalue().replace("[nltk_data]", " ").split())
                logging.getLogger("allennlp_tune.compat").debug(
                    _NLTK_NOTICE, info_or_id, text or "download failed", info_or_id
                )
            return done

        nltk.download = download
        return self

    def __exit__(self, *exc_info):
        if self._nltk is not None:
            self._nltk.download = self._original
        return False
