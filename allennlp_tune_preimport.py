"""The part of allennlp-tune's compatibility fixes that must act before AllenNLP imports
`transformers` and `huggingface_hub` (see `allennlp_tune/compat.py`, fixes 5 to 9), the
`allennlp` command line's short errors (fix 11), which must see the command line before
AllenNLP parses it, and what acts on AllenNLP's own modules as they load: the installed plugin's
discovery (12), a start without warnings or INFO lines (13), a lazy torchvision (14) and
SciPy, scikit-learn and NLTK loaded when a metric first uses them (15).

Loaded by the one line of `allennlp_tune.pth`, which pip puts in site-packages with the package
(editable or not), so it runs at every interpreter start in that environment: `allennlp ...`,
`python -m allennlp ...`, `python -c "import allennlp"` and the test suite alike. It therefore
imports nothing at start-up but `sys` and `os` (both loaded already), and only puts a finder on
`sys.meta_path` that waits for the few modules below: a Python program that never imports them
pays nothing else. When one of them is imported, the finder lets the normal finders locate it
and wraps that module's `exec_module`, so the fix runs just before or just after the module's
own code, once. `ALLENNLP_TUNE_NO_PREIMPORT=1` turns the hook off (to see AllenNLP unpatched).

This is a top-level module, not `allennlp_tune._preimport`, because importing a submodule
imports its package first, and `allennlp_tune/__init__.py` imports AllenNLP itself.
Every fix is a no-op where the stack still has what AllenNLP expects (transformers 4.20 of a
stock AllenNLP install, the locked 4.43.4), and `install()` is idempotent: `allennlp_tune.compat`
calls it too, so importing the plugin from a source tree without the `.pth` still fixes what
has not been imported yet (and `apply_to_loaded()` what has).
"""

import sys

__all__ = ["install", "apply_to_loaded", "install_cli_excepthook"]

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


# ---- 11. the allennlp command line: a clear error in one line, not under a traceback ------------

# Ask for the full traceback of a clear error, on the command line or in the environment.
VERBOSE_FLAGS = ("-v", "--verbose")
VERBOSE_ENV = "ALLENNLP_TUNE_VERBOSE"
# What a user's input or settings caused, and its message says how to fix: (module, class).
_USER_ERRORS = (
    ("allennlp.common.checks", "ConfigurationError"),
    ("allennlp_tune.data.fetch", "FetchError"),
)
_cli = {"verbose": False}


def running_allennlp_cli() -> bool:
    """Whether this process is the `allennlp` command (its console script, or `python -m
    allennlp`), rather than a Python program, a notebook or a test run that imports AllenNLP."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and getattr(spec, "name", None) == "allennlp.__main__":
        return True
    import os

    return os.path.basename(getattr(main, "__file__", None) or "") == "allennlp"


def verbose_requested() -> bool:
    """Whether the user asked for tracebacks: `-v` / `--verbose` on the `allennlp` command line
    (taken off it by `install_cli_excepthook`) or ALLENNLP_TUNE_VERBOSE=1."""
    import os

    return _cli["verbose"] or os.environ.get(VERBOSE_ENV, "") not in ("", "0")


def _is_user_error(error: BaseException) -> bool:
    for module_name, class_name in _USER_ERRORS:
        cls = getattr(sys.modules.get(module_name), class_name, None)
        if isinstance(cls, type) and isinstance(error, cls):
            return True
    return False


def _subcommand() -> str:
    """`predict` of `allennlp predict ARCHIVE ...`: the first argument that is not an option."""
    return next((arg for arg in sys.argv[1:] if not arg.startswith("-")), "")


def _cli_excepthook(kind, error, traceback) -> None:
    """A `ConfigurationError` (or the plugin's `FetchError`) ends `allennlp` with its message in
    one line, `allennlp predict: <message>`, and exit status 2, as allennlp-tune's own
    subcommands do; with `-v` / `--verbose` or ALLENNLP_TUNE_VERBOSE=1 its traceback comes
    first. Every other exception keeps its traceback and status 1."""
    previous = _cli_excepthook.previous  # type: ignore[attr-defined]
    if not _is_user_error(error):
        previous(kind, error, traceback)
        return
    if verbose_requested():
        previous(kind, error, traceback)
    command = " ".join(part for part in ("allennlp", _subcommand()) if part)
    print(f"{command}: {error}", file=sys.stderr)
    sys.stderr.flush()
    # Raised inside an excepthook, SystemExit ends the interpreter with that status, after the
    # usual clean-up (atexit handlers such as AllenNLP's removal of extracted archives).
    sys.exit(2)


def install_cli_excepthook() -> bool:
    """In the `allennlp` command only (see `running_allennlp_cli`), puts `_cli_excepthook` in
    `sys.excepthook` and takes `-v` / `--verbose` off the command line (AllenNLP's parser would
    refuse them). Importing allennlp-tune in a Python program leaves `sys.excepthook` alone.
    Returns whether the hook is in place."""
    if not running_allennlp_cli():
        return False
    if getattr(sys.excepthook, "_allennlp_tune_cli", False):
        return True
    if any(arg in VERBOSE_FLAGS for arg in sys.argv[1:]):
        _cli["verbose"] = True
        sys.argv[1:] = [arg for arg in sys.argv[1:] if arg not in VERBOSE_FLAGS]
    _cli_excepthook.previous = sys.excepthook  # type: ignore[attr-defined]
    _cli_excepthook._allennlp_tune_cli = True  # type: ignore[attr-defined]
    sys.excepthook = _cli_excepthook
    return True


def _after_allennlp_commands(module) -> None:
    """Fix 11 as soon as the `allennlp` command imports its commands, before it parses the
    command line (it imports plugins only after that, for its own subcommands), and fixes 12
    and 13 for the command line: `parse_args` imports the plugin for its subcommands, with
    AllenNLP's plugin INFO lines held back."""
    install_cli_excepthook()
    _patch_parse_args(module)


# ---- 12. an installed plugin is a discovered plugin ---------------------------------------------

PLUGIN = "allennlp_tune"
_PLUGINS_LOGGER = "allennlp.common.plugins"


def _plugin_installed() -> bool:
    """Whether `allennlp_tune` can be imported here (the hook module may be on a PYTHONPATH
    without its package)."""
    import importlib.util

    try:
        return importlib.util.find_spec(PLUGIN) is not None
    except (ImportError, ValueError):
        return False


def _patch_plugins(plugins) -> None:
    """AllenNLP imports as plugins its own DEFAULT_PLUGINS (allennlp_models and two others)
    and the modules listed in `.allennlp_plugins` (in the working folder) or
    `~/.allennlp/plugins`; an installed package is found in no other way, so from a user's own
    folder `allennlp tune-compare` was an "invalid choice" and a config's plugin components
    unknown. We wrap `discover_plugins` (which `import_plugins` calls) so that it also yields
    `allennlp_tune`, after the files' modules and only if they did not name it: importing it
    again is a no-op, so the files keep working as before."""
    original = getattr(plugins, "discover_plugins", None)
    if original is None or getattr(original, "_allennlp_tune_shim", False):
        return

    def discover_plugins():
        found = set()
        for name in original():
            found.add(name)
            yield name
        if PLUGIN not in found and _plugin_installed():
            yield PLUGIN

    discover_plugins.__doc__ = original.__doc__
    discover_plugins._allennlp_tune_shim = True
    plugins.discover_plugins = discover_plugins


def _import_plugin_for(argv: "list[str]") -> None:
    """Imports `allennlp_tune`, which registers its subcommands, when the command line names
    no subcommand that AllenNLP has registered (`allennlp tune-report ...`). AllenNLP then
    finds the subcommand in its first pass and skips `import_plugins` before parsing: that
    call imports every module of AllenNLP and of allennlp-models (torchvision and the vision
    models with them), which `--help` does not need. A command that runs still gets
    `import_plugins` after parsing, as every subcommand with `requires_plugins` does. AllenNLP's
    own subcommands and `allennlp --help` go AllenNLP's way, unchanged."""
    if not argv or argv == ["--help"]:
        return
    subcommand = getattr(sys.modules.get("allennlp.commands"), "Subcommand", None)
    try:
        if argv[0] in subcommand.list_available():
            return
    except Exception:  # an AllenNLP without `Subcommand.list_available`: leave it to AllenNLP
        return
    if PLUGIN in sys.modules or not _plugin_installed():
        return
    import importlib
    import logging

    importlib.import_module(PLUGIN)
    logging.getLogger(_PLUGINS_LOGGER).info(
        "Plugin %s available (imported for its subcommands)", PLUGIN
    )


# ---- 13. a quiet start: no warning and no INFO line before the command runs -------------------


class _QuietPluginsLog:
    """While `allennlp` parses its command line (and, for a subcommand that needs them,
    imports the plugins), the `allennlp.common.plugins` logger is at WARNING: its `Plugin
    allennlp_models available` lines come at INFO on every command, before anything the user
    asked for. A plugin that fails to load is still reported (at ERROR), the level is restored
    before the command runs, and `-v` / ALLENNLP_TUNE_VERBOSE=1 leave it alone."""

    def __enter__(self):
        import logging

        self._logger = logging.getLogger(_PLUGINS_LOGGER)
        self._level = self._logger.level
        if not verbose_requested():
            self._logger.setLevel(max(self._level, logging.WARNING))
        return self

    def __exit__(self, *exc_info):
        self._logger.setLevel(self._level)
        return False


def _patch_parse_args(commands) -> None:
    """Wraps `allennlp.commands.parse_args`, which `main` calls: fixes 12 (the plugin's
    subcommands without `import_plugins`) and 13 (AllenNLP's plugin lines held back)."""
    original = getattr(commands, "parse_args", None)
    if original is None or getattr(original, "_allennlp_tune_shim", False):
        return

    def parse_args(*args, **kwargs):
        with _QuietPluginsLog():
            _import_plugin_for(sys.argv[1:])
            return original(*args, **kwargs)

    parse_args.__doc__ = original.__doc__
    parse_args._allennlp_tune_shim = True
    commands.parse_args = parse_args


class _QuietPkgResources:
    """allennlp-models imports py-rouge, whose `rouge/rouge.py` does `import pkg_resources`;
    recent setuptools warns (a UserWarning) that `pkg_resources` is deprecated, so every
    `allennlp` command began with that warning, which no user of the plugin can act on. Just
    before that module runs, we add a filter that ignores that one warning when it is
    attributed to that module (not with `-v` / ALLENNLP_TUNE_VERBOSE=1)."""

    def __enter__(self):
        if not verbose_requested():
            import warnings

            warnings.filterwarnings(
                "ignore",
                message="pkg_resources is deprecated as an API",
                category=UserWarning,
                module=r"rouge\.rouge$",
            )
        return self

    def __exit__(self, *exc_info):
        return False


class _QuietGoogleVersionSupport:
    """AllenNLP's `cached_path` imports google-cloud-storage (for `gs://` paths), whose
    google-api-core checks, at import, the running Python against Google's support calendar and
    warns (a FutureWarning) when that Python nears or passed its end of support: on the stock
    AllenNLP stack's Python 3.10, every `allennlp` command began with "You are using a
    non-supported Python version (3.10.x). Google will not post any further updates to
    google.api_core ...", which depends on the date and which no user of the plugin can act on.
    Just before `google.api_core` runs, we ignore the FutureWarnings of its two version-support
    modules (`_python_version_support`, `_python_package_support`), only those (not with `-v` /
    ALLENNLP_TUNE_VERBOSE=1)."""

    def __enter__(self):
        if not verbose_requested():
            import warnings

            warnings.filterwarnings(
                "ignore",
                category=FutureWarning,
                module=r"google\.api_core\._python_(version|package)_support$",
            )
        return self

    def __exit__(self, *exc_info):
        return False


# ---- 14. a quick start: torchvision only when something uses it --------------------------------


# The lazy modules whose code has run (or is running).
_lazy_loaded = set()


class _LazyModule(type(sys)):
    """A module whose code runs on the first access to an attribute it does not have yet.

    `importlib.util.LazyLoader` would not do here: its module loads on *any* attribute access,
    and the next `import torchvision` statement anywhere reads `__spec__`, so it would load
    at once. This one keeps the attributes that the import system reads (`__name__`,
    `__spec__`, `__loader__`, `__package__`, `__file__`) and leaves out `__path__`, so that
    importing a submodule (`import torchvision.ops`) first runs the package's own code, as a
    normal import does (when that code imports the submodule itself, `_loaded_submodule_spec`
    keeps the import from running it again). After that it is a plain module, the same
    object."""

    def __getattr__(self, name: str):
        _load_lazy_module(self)
        return getattr(self, name)

    def __dir__(self):
        _load_lazy_module(self)
        return dir(self)


def _load_lazy_module(module) -> None:
    """Runs a `_LazyModule`'s code in it, once; a failure takes it out of `sys.modules` (as a
    failed import does) and is raised."""
    if type(module) is not _LazyModule:
        return
    spec = module.__spec__
    _lazy_loaded.add(spec.name)
    module.__class__ = type(sys)
    if spec.submodule_search_locations is not None:
        module.__path__ = spec.submodule_search_locations
    try:
        spec.loader.exec_module(module)
    except BaseException:
        if sys.modules.get(spec.name) is module:
            del sys.modules[spec.name]
        raise


class _AlreadyLoaded:
    """The loader of a module that is in `sys.modules` already: gives that module, runs
    nothing, and puts back the module's own `__spec__` (which the import system replaces by the
    spec it loads with)."""

    def __init__(self, module):
        self._module = module
        self._spec = getattr(module, "__spec__", None)

    def create_module(self, spec):
        return self._module

    def exec_module(self, module) -> None:
        if self._spec is not None:
            module.__spec__ = self._spec


def _loaded_submodule_spec(name: str, target):
    """`import torchvision.ops`, with a lazy torchvision: the import system reads the
    package's `__path__`, which runs the package's code, which imports `torchvision.ops`
    itself; the import system then looks for `torchvision.ops` all the same and would run it a
    second time, in a new module object. For such a submodule, already in `sys.modules` when
    the finders are asked (which happens only in that case and for a reload, which passes its
    `target`), we give a spec that loads that very module."""
    if target is not None or "." not in name or name.partition(".")[0] not in _lazy_loaded:
        return None
    module = sys.modules.get(name)
    if module is None:
        return None
    import importlib.machinery

    return importlib.machinery.ModuleSpec(name, _AlreadyLoaded(module))


def install_lazy_module(name: str) -> bool:
    """Puts a `_LazyModule` for the top-level module `name` in `sys.modules`, unless it is
    imported already or cannot be found. Returns whether it did."""
    if name in sys.modules:
        return False
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
        return False
    module = importlib.util.module_from_spec(spec)
    module.__dict__.pop("__path__", None)
    module.__class__ = _LazyModule
    sys.modules[name] = module
    return True


class _LazyTorchvision:
    """`allennlp.data.image_loader` (imported by `allennlp.data`, hence by every `allennlp`
    command) does `import torchvision` at import and uses it only when an image is loaded.
    Importing torchvision imports its models and ops, and with them `torch._dynamo`: about a
    third of `import allennlp.commands`, for image models that a text command never builds.
    While that module is imported, if torchvision is not imported yet, we put a lazy
    torchvision in `sys.modules` (`_LazyModule`): `torchvision.io.read_image` there, `import
    torchvision.ops` or `from torchvision import ...` anywhere later run torchvision's code
    then, in the same module object, and get the real thing."""

    def __enter__(self):
        install_lazy_module("torchvision")
        return self

    def __exit__(self, *exc_info):
        return False


# ---- 15. a quick start: SciPy, scikit-learn and NLTK only when a metric uses them -------------


class _DeferredModule(type(sys)):
    """Stands in for a module that an import statement names, while the importing module's
    code runs (`_DeferNames`), so that the statement binds stand-ins instead of running the
    named module's code: each name in `names` gives a stand-in of its kind (`_forward`);
    any other attribute, or any attribute once the importing module has run, loads the real
    module (`importlib.import_module`) and is read from it."""

    def __init__(self, name: str, names: "dict[str, str]"):
        import importlib.machinery

        super().__init__(name)
        # A spec without a loader: `importlib.util.find_spec(name)` (transformers 4.20's
        # `is_sklearn_available`, while the importing module runs) finds the module installed.
        self.__spec__ = importlib.machinery.ModuleSpec(name, None)
        self._allennlp_tune_names = names
        self._allennlp_tune_open = True

    def __getattr__(self, attribute: str):
        if attribute.startswith("__") or attribute.startswith("_allennlp_tune"):
            raise AttributeError(attribute)
        kind = self._allennlp_tune_names.get(attribute) if self._allennlp_tune_open else None
        if kind is not None:
            return _forward(self.__name__, attribute, kind)
        return getattr(_real_module(self.__name__), attribute)


def _real_module(name: str):
    """The real module `name`, imported now if need be (a stand-in still in `sys.modules` is
    taken out first)."""
    import importlib

    if isinstance(sys.modules.get(name), _DeferredModule):
        del sys.modules[name]
    return importlib.import_module(name)


class _DeferredClassMeta(type):
    """The metaclass of a stand-in class: calling it, `isinstance`, `issubclass` and its
    attributes act on the real class."""

    def _real(cls):
        return getattr(_real_module(cls._allennlp_tune_module), cls.__name__)

    def __call__(cls, *args, **kwargs):
        return cls._real()(*args, **kwargs)

    def __instancecheck__(cls, instance) -> bool:
        return isinstance(instance, cls._real())

    def __subclasscheck__(cls, subclass) -> bool:
        return issubclass(subclass, cls._real())

    def __getattr__(cls, attribute: str):
        if attribute.startswith("__") or attribute == "_allennlp_tune_module":
            raise AttributeError(attribute)
        return getattr(cls._real(), attribute)


def _forward(module: str, name: str, kind: str):
    """A stand-in for `module.name`: a function that calls the real one (`function`), a class
    that acts as the real one (`class`), or a module whose attributes are the real one's
    (`module`, for a submodule)."""
    if kind == "module":
        stand_in = _DeferredModule(f"{module}.{name}", {})
        stand_in._allennlp_tune_open = False
        return stand_in
    if kind == "class":
        return _DeferredClassMeta(name, (), {"_allennlp_tune_module": module, "__module__": module})

    def function(*args, **kwargs):
        return getattr(_real_module(module), name)(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__module__ = module
    function.__doc__ = f"Calls `{module}.{name}` (imported on the first call)."
    return function


class _DeferNames:
    """Around a module's code: the modules named in `DEFERRED` (module -> name -> kind) that
    are not imported yet are `_DeferredModule`s in `sys.modules`, so that the module's `from X
    import Y` and `import X.Y as Z` bind stand-ins; afterwards they leave `sys.modules`, and the
    next import of X anywhere is a normal one. A library that is not installed gets none, so
    that the import fails as it did."""

    DEFERRED: "dict[str, dict[str, str]]" = {}

    def __enter__(self):
        self._stand_ins = {}
        for name, names in self.DEFERRED.items():
            if name not in sys.modules and _installed(name.partition(".")[0]):
                self._stand_ins[name] = sys.modules[name] = _DeferredModule(name, dict(names))
        for name in self._stand_ins:  # `import scipy.stats as stats`
            parent, _, child = name.rpartition(".")
            if parent in self._stand_ins:
                self._stand_ins[parent]._allennlp_tune_names.setdefault(child, "module")
        return self

    def __exit__(self, *exc_info):
        for name, stand_in in self._stand_ins.items():
            stand_in._allennlp_tune_open = False
            if sys.modules.get(name) is stand_in:
                del sys.modules[name]
        return False


def _installed(top_level: str) -> bool:
    """Whether the top-level module can be imported here (found without running its code); a
    library that is not installed gets no stand-in, so that importing it fails as it did."""
    import importlib.util

    try:
        return importlib.util.find_spec(top_level) is not None
    except (ImportError, ValueError):
        return False


def _defer(deferred: "dict[str, dict[str, str]]"):
    """A `_DeferNames` for one importing module."""
    return type("_DeferNames", (_DeferNames,), {"DEFERRED": deferred})


# Every `allennlp` command imports these four modules (through `allennlp.commands`), which import
# SciPy's statistics, scikit-learn and NLTK at the top for functions that only a metric's
# computation calls: about a third of the start of a command on transformers 4, for a `--help`
# or a run that never computes those metrics.
_TRANSFORMERS_METRICS = _defer(
    {
        # transformers' deprecated GLUE metrics (imported by its data collators)
        "scipy.stats": {"pearsonr": "function", "spearmanr": "function"},
        "sklearn.metrics": {"f1_score": "function", "matthews_corrcoef": "function"},
    }
)
_ALLENNLP_SPEARMAN = _defer({"scipy": {}, "scipy.stats": {}})  # `import scipy.stats as stats`
_ALLENNLP_AUC = _defer({"sklearn": {"metrics": "module"}})  # `from sklearn import metrics`
_ALLENNLP_EVALB = _defer({"nltk": {"Tree": "class"}})  # `from nltk import Tree`, for type hints
# allennlp-models' SST reader and its OntoNotes reader, which the plugin's BCN and CRF tagger
# import: `from nltk.tree import Tree`, `from nltk import Tree`
_MODELS_SST = _defer({"nltk.tree": {"Tree": "class"}})
_MODELS_ONTONOTES = _ALLENNLP_EVALB


# ---- the hook ---------------------------------------------------------------------------------

# module name -> (context manager class around its code or None, function after it or None)
_HOOKS = {
    "huggingface_hub": (None, _patch_huggingface_hub),
    "transformers": (None, _patch_transformers),
    "transformers.tokenization_utils_base": (None, _patch_tokenization_utils_base),
    "allennlp.common.cached_transformers": (None, _patch_cached_transformers),
    "allennlp_models.rc.tools.narrativeqa": (_QuietNltkDownload, None),
    "allennlp.commands": (None, _after_allennlp_commands),
    "allennlp.common.plugins": (None, _patch_plugins),
    "rouge.rouge": (_QuietPkgResources, None),
    "google.api_core": (_QuietGoogleVersionSupport, None),
    "allennlp.data.image_loader": (_LazyTorchvision, None),
    "transformers.data.metrics": (_TRANSFORMERS_METRICS, None),
    "allennlp.training.metrics.spearman_correlation": (_ALLENNLP_SPEARMAN, None),
    "allennlp.training.metrics.auc": (_ALLENNLP_AUC, None),
    "allennlp.training.metrics.evalb_bracketing_scorer": (_ALLENNLP_EVALB, None),
    "allennlp_models.classification.dataset_readers.stanford_sentiment_tree_bank": (
        _MODELS_SST,
        None,
    ),
    "allennlp_models.common.ontonotes": (_MODELS_ONTONOTES, None),
}


class _PreImportFinder:
    """A meta-path finder that finds nothing itself: for the modules in `_HOOKS`, it asks the
    other finders for the spec and wraps its loader's `exec_module` with the fix (and, for a
    lazy module's submodule that its package's code has just imported, gives that module:
    `_loaded_submodule_spec`)."""

    _allennlp_tune_preimport = True

    def __init__(self):
        self._pending = dict(_HOOKS)

    def find_spec(self, name, path=None, target=None):
        if name not in self._pending:
            return _loaded_submodule_spec(name, target) if _lazy_loaded else None
        around, after = self._pending.pop(name)
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        original = loader.exec_module

        def exec_module(module):
            if around is None:
                original(module)
            else:
                with around():
                    original(module)
            if after is not None:
                after(sys.modules.get(name, module))

        try:
            loader.exec_module = exec_module
        except (AttributeError, TypeError):  # a loader that takes no attributes: leave it
            pass
        return spec


def install() -> None:
    """Puts the finder first on `sys.meta_path` (once; not with ALLENNLP_TUNE_NO_PREIMPORT=1)."""
    import os

    if os.environ.get("ALLENNLP_TUNE_NO_PREIMPORT", "") not in ("", "0"):
        return
    if any(getattr(f, "_allennlp_tune_preimport", False) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _PreImportFinder())


def apply_to_loaded() -> None:
    """Applies the after-import fixes to those of the modules that are already imported."""
    for name, (_around, after) in _HOOKS.items():
        module = sys.modules.get(name)
        if module is not None and after is not None:
            after(module)
