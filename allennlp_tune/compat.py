"""Fixes for running AllenNLP 2.10.1 on a modern stack: the locked one (torch 2.x, spaCy 3.8,
transformers 4.43, requirements/lock.txt) and today's (transformers 5, huggingface_hub 2,
requirements/lock-modern.txt).

Fixes 1-4, 10 and 16 live here and are applied when this module is imported, which
`allennlp_tune/__init__.py` does first, so `--include-package allennlp_tune` or the
`.allennlp_plugins` file applies them before any component is built. Fixes 5-9 must act earlier,
before AllenNLP's own modules import `transformers` and `huggingface_hub` (or, for 9, before
`allennlp` imports allennlp-models, which it does before any plugin), and fix 11 before the
`allennlp` command parses its command line: they live in the top-level package
`allennlp_tune_preimport` and are applied by its start-up hook (below). Each fix is small, says
what breaks without it, is a no-op where nothing is broken (a stock AllenNLP install's
transformers 4.20, the locked 4.43.4), and has a test that fails without it: in
`tests/test_compat.py` (1, 2, 5-8), `tests/commands/test_archive_safety.py` (3, 4),
`tests/test_startup_noise.py` (9), `tests/predictors/test_predict_errors.py` (10, 11),
`tests/results/test_test_split.py` (16) and `tests/test_preimport_hook.py` (the hook itself).

How fixes 5-9 are applied: a `.pth` file. `pip install` (editable or not) puts
`allennlp_tune.pth` in site-packages (setup.py's `build_py_with_pth`, as setuptools ships its
own `distutils-precedence.pth`); its one line imports `allennlp_tune_preimport` and calls
`install()`, which only puts a meta-path finder on `sys.meta_path` that waits for `allennlp`.
When AllenNLP is first imported, that finder gives way to the fixes' finder, which wraps the
loading of the modules the fixes concern (huggingface_hub, transformers,
transformers.tokenization_utils_base, allennlp.common.cached_transformers, allennlp-models'
narrativeqa tools, ...) so that each fix runs just before or after that module's own code, and
applies the after-import fixes at once to those of them imported already. Why a
`.pth` file and not the alternatives:
- an entry point (AllenNLP's plugin discovery, `.allennlp_plugins`) runs far too late: `import
  allennlp.commands` already fails on transformers 5 / huggingface_hub 2, and `allennlp`
  imports allennlp-models (fix 9's noise) before it reads `.allennlp_plugins`;
- a wrapper console script would replace `allennlp`, but not `python -m allennlp` (which runs
  `allennlp/__main__.py`) nor `import allennlp` in a user's program or a notebook;
- `sitecustomize.py` is a single file per environment that other packages may own.
The cost of the `.pth` for a Python program that never imports AllenNLP is one small module
import (`sys` only) and one finder consulted per import, which patches nothing; set
`ALLENNLP_TUNE_NO_PREIMPORT=1` to turn it off. Without the `.pth` (a source tree used with
`--include-package allennlp_tune` and no install), importing this module installs the same
finder and applies the after-import fixes to the modules already imported, which is all that
can still be done then.

1. `reduce_on_plateau`: AllenNLP passes `verbose=` to `torch.optim.lr_scheduler.ReduceLROnPlateau`,
   which torch 2.x removed, so every config using it (allennlp-models' ESIM among them) fails at
   construction. We re-register the scheduler under the same name; `verbose` is still accepted
   in configs and logs learning-rate reductions through the standard logger instead.
2. Missing spaCy models: AllenNLP's `get_spacy_model` tries `spacy download` when a model is not
   installed, which fails with a network traceback on a machine that reaches only package
   registries. We raise a `ConfigurationError` naming the model and the fixes instead.
3. Unsafe archive extraction: AllenNLP's `extracted_archive` (used by `load_archive`, hence by
   `allennlp evaluate`, `allennlp predict`, `allennlp probe --archive`, `allennlp mi --archive`
   and the `pretrained` initializer) calls `tarfile.extractall` on the archive without checks,
   so a crafted `model.tar.gz` with a `../` or absolute member, or a link member, writes
   outside its temporary folder; a file that is not a gzip-compressed tar fails with a
   `tarfile` traceback. We replace it with `safe_extract`, which checks every member first and
   refuses with a `ConfigurationError` naming the archive and the member. An archive without
   `config.json` is refused the same way (AllenNLP would fail with a `FileNotFoundError` naming
   its temporary folder). The same member rules replace `cached_path`'s weaker check for the
   archives it extracts (data archives).
4. Pickled code in weights: AllenNLP's `read_state_dict` (the archive's `weights.th`) calls
   `torch.load` without `weights_only`, which is safe only because torch >= 2.6 defaults to
   `weights_only=True`. We pass `weights_only=True` explicitly, so the weights file cannot run
   code whatever the default, and turn the refusal into a `ConfigurationError` (without
   torch's hint to pass `weights_only=False`); a file that is no torch weights file at all
   (plain bytes) is called that, not "pickled objects".
5. huggingface_hub >= 1.0 removed `HfFolder` and `Repository`, which `allennlp.common` imports
   (`push_to_hf`), so `import allennlp.commands` fails. We add `HfFolder`'s token helpers and a
   `Repository` that says, when used, to upload with `hf upload` (`allennlp push-to-hf` fails
   on the huggingface_hub 0.36 of lock.txt as well: its `create_repo(name=...)` is long gone).
6. transformers 5 removed `transformers.AdamW`, which `allennlp.training.optimizers` subclasses
   at import (`huggingface_adamw`), so every `allennlp` command fails. We put it back as
   `torch.optim.AdamW` with the old signature (`correct_bias=True` only).
7. transformers >= 4.44: AllenNLP builds its tokenizers with `add_special_tokens=False/True`
   as a `from_pretrained` argument, which transformers now refuses ("add_special_tokens
   conflicts with the method add_special_tokens in BertTokenizer"), so every transformer
   tokenizer fails to build. We leave it out of the construction (AllenNLP passes it at every
   encode call).
8. transformers 5 removed the tokenizers' `encode_plus` and `batch_encode_plus`, which
   AllenNLP's `PretrainedTransformerTokenizer` and allennlp-models' readers call, and the fast
   tokenizers' `build_inputs_with_special_tokens`, which `PretrainedTransformerIndexer` calls
   to fold inputs longer than `max_length`. We add them back (the first two as the `__call__`
   they were, the third from the special tokens the backend's post-processor adds).
9. `[nltk_data] Error loading punkt / wordnet` lines on every `allennlp` command offline
   (issue 18): allennlp-models' `rc/tools/narrativeqa.py` calls `nltk.download` at import. We
   make those calls quiet and log a failed one once, at DEBUG, with the reason and the command
   that installs the data (DEBUG: allennlp logs INFO on every command, and only narrativeqa's
   tools need the data; they fail with nltk's own `LookupError` naming it); online, the data is
   still downloaded.
10. `allennlp predict` reads its input file in the locale's text mode, so bytes that are not
   UTF-8 fail with a `UnicodeDecodeError` that names neither the file nor the line, and a
   missing file with `cached_path`'s `FileNotFoundError`. We read the lines as UTF-8 (JSON's
   encoding) and raise a `ConfigurationError` naming the file and the line (or the missing
   file) instead; the lines go to the predictor as before.
11. The `allennlp` command prints a `ConfigurationError`, however clear its message, under a
   full Python traceback (AllenNLP's own `predict` and `evaluate` catch nothing). In the
   `allennlp` command only, a `sys.excepthook` prints it as one line, `allennlp predict:
   <message>`, and exits with status 2, as the plugin's own subcommands do; `-v` / `--verbose`
   or ALLENNLP_TUNE_VERBOSE=1 show the traceback too. Other exceptions keep their traceback,
   and importing the plugin in a Python program leaves `sys.excepthook` alone.
12. AllenNLP finds a plugin only through a `.allennlp_plugins` file in the working folder or
   `~/.allennlp/plugins`, so from any other folder `allennlp tune-compare` was an "invalid
   choice" and a config naming the plugin's components failed. The installed plugin is now
   always among the discovered plugins (`discover_plugins` also yields `allennlp_tune`), and
   a command line whose subcommand AllenNLP does not know imports the plugin first, so its
   subcommands are found without `import_plugins`, which imports every module of AllenNLP and
   allennlp-models (`--help` needs none of them). The plugin files keep working.
13. Every command began with py-rouge's `pkg_resources` deprecation warning and INFO lines
   (`Plugin allennlp_models available`, this module's own re-registration of
   `reduce_on_plateau`). We ignore that one warning where py-rouge imports `pkg_resources`,
   replace the registration in AllenNLP's registry without its overwrite message, and hold the
   `allennlp.common.plugins` logger at WARNING while the command line is parsed and the plugins
   imported; `-v` / ALLENNLP_TUNE_VERBOSE=1 show them. AllenNLP's training log is untouched.
14. `allennlp.data.image_loader`, imported by every command, imports torchvision, whose models
   and ops import `torch._dynamo`: about a third of `import allennlp.commands`. It gets a lazy
   torchvision, which runs torchvision's code (in the same module object) on first use.
15. AllenNLP's Spearman, AUC and EVALB metrics, transformers' GLUE metrics (through its data
   collators) and allennlp-models' SST and OntoNotes readers (through the plugin's BCN and CRF
   tagger) import SciPy's statistics, scikit-learn and NLTK at the top, for functions that
   only computing those metrics or reading those files calls: after fix 14, about half of what
   `allennlp tune-report --help` spent beyond `import torch`. While each of these modules
   runs, the names it imports from those libraries are bound to stand-ins (a function that
   calls the real one, a class that acts as the real one, a module that reads the real one)
   that import the library on first use; nothing else changes.

16. AllenNLP's `TrainModel` builds a data loader for `test_data_path` whenever a config has one,
   and its `MultiProcessDataLoader` reads every instance at construction, so training read the
   test file even without `evaluate_on_test` and a bad row there (an unknown label) failed every
   run, though `datasets_for_vocab_creation` left the test split out. We pass it no
   `test_data_path` when `datasets_for_vocab_creation` leaves the test split out and
   `evaluate_on_test` is off (every task config of `experiment.libsonnet`);
   `config.json` and the archive keep it, for `allennlp evaluate`, `--test` and `tune-test`.

Fixes 12-15 act from the start-up hook too (`allennlp.commands`, `allennlp.common.plugins`,
py-rouge's `rouge.rouge`, `allennlp.data.image_loader` and the modules of fix 15); they are
tested in `tests/commands/test_discovery.py` (12), `tests/test_startup_noise.py` (13) and
`tests/test_lazy_imports.py` (14, 15); `bench/bench_startup.py` measures the start-up time.
"""

import contextlib
import gzip
import inspect
import logging
import ntpath
import os
import pickle
import shutil
import sys
import tarfile
import tempfile
import types
import zlib
from typing import Any, Dict, Iterator, List, Union

import torch

import allennlp_tune_preimport
from allennlp_tune_preimport.cli import install_cli_excepthook

# Fixes 5-9 and 11 (see the docstring): normally already in place through allennlp_tune.pth;
# without it, this is what can still be done (for 11: -v comes too late for AllenNLP's own
# subcommands, which parse the command line before they import plugins; the environment
# variable still works).
allennlp_tune_preimport.install_fixes()
install_cli_excepthook()

from allennlp.common.checks import ConfigurationError  # noqa: E402
from allennlp.common.registrable import Registrable  # noqa: E402
from allennlp.training.learning_rate_schedulers import LearningRateScheduler  # noqa: E402
from allennlp.training.learning_rate_schedulers.pytorch_lr_schedulers import (  # noqa: E402
    _PyTorchLearningRateSchedulerWithMetricsWrapper,
)

logger = logging.getLogger(__name__)


class ReduceOnPlateauLearningRateScheduler(_PyTorchLearningRateSchedulerWithMetricsWrapper):
    """
    AllenNLP's `reduce_on_plateau` scheduler, without the `verbose` argument that torch 2.x's
    `ReduceLROnPlateau` no longer accepts. Same name, same parameters:

    ```jsonnet
    "learning_rate_scheduler": {"type": "reduce_on_plateau", "mode": "max", "factor": 0.5,
                                "patience": 0}
    ```
    """

    def __init__(
        self,
        optimizer: torch.optim.Optimizer,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        verbose: bool = False,
        threshold_mode: str = "rel",
        threshold: float = 1e-4,
        cooldown: int = 0,
        min_lr: Union[float, List[float]] = 0,
        eps: float = 1e-8,
    ) -> None:
        lr_scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(
            optimizer=optimizer,
            mode=mode,
            factor=factor,
            patience=patience,
            threshold_mode=threshold_mode,
            threshold=threshold,
            cooldown=cooldown,
            min_lr=min_lr,
            eps=eps,
        )
        self._verbose = verbose
        super().__init__(lr_scheduler)

    def step(self, metric: float = None) -> None:
        before = [group["lr"] for group in self.lr_scheduler.optimizer.param_groups]
        super().step(metric)
        after = [group["lr"] for group in self.lr_scheduler.optimizer.param_groups]
        if self._verbose and before != after:
            logger.info("reduce_on_plateau: learning rates %s -> %s", before, after)


# Replaces AllenNLP's class under its name in the registry itself: `register(name,
# exist_ok=True)` would do the same but log "reduce_on_plateau has already been registered ...
# overwriting" at INFO at the start of every command.
Registrable._registry[LearningRateScheduler]["reduce_on_plateau"] = (
    ReduceOnPlateauLearningRateScheduler,
    None,
)


def _get_spacy_model_offline(
    spacy_model_name: str, pos_tags: bool = True, parse: bool = False, ner: bool = False
):
    import spacy
    from allennlp.common import util

    options = (spacy_model_name, pos_tags, parse, ner)
    if options not in util.LOADED_SPACY_MODELS:
        disable = ["vectors", "textcat"]
        if not pos_tags:
            disable.append("tagger")
        if not parse:
            disable.append("parser")
        if not ner:
            disable.append("ner")
        try:
            spacy_model = spacy.load(spacy_model_name, disable=disable)
        except OSError as error:
            raise ConfigurationError(
                f"The spaCy model {spacy_model_name!r} is not installed, and allennlp-tune does "
                "not download models at run time. Either use a tokenizer that needs no model "
                '(allennlp-tune\'s readers default to {"type": "spacy_rules"}, spaCy\'s rule-based '
                'English tokenizer; "whitespace" for pre-tokenised text; "pretrained_transformer" '
                "for BERT), or install the model's wheel"
                f" into this environment (pip install {spacy_model_name}-"
                "<version>-py3-none-any.whl from a machine that has it)."
            ) from error
        util.LOADED_SPACY_MODELS[options] = spacy_model
    return util.LOADED_SPACY_MODELS[options]


def _patch_spacy_loader() -> None:
    from allennlp.common import util
    from allennlp.data.tokenizers import sentence_splitter, spacy_tokenizer

    for module in (util, spacy_tokenizer, sentence_splitter):
        module.get_spacy_model = _get_spacy_model_offline


_patch_spacy_loader()


# ---- 3. archive extraction ------------------------------------------------------------------


def _member_problem(member: tarfile.TarInfo) -> str:
    """Why `member` may not be extracted from a model archive, or "" when it may."""
    name = member.name
    if name.startswith(("/", "\\")) or os.path.isabs(name) or ntpath.splitdrive(name)[0]:
        return "has an absolute path"
    if ".." in name.replace("\\", "/").split("/"):
        return "has a '..' component that leaves the extraction folder"
    # AllenNLP's `archive_model` writes only files and folders. Links are refused outright
    # rather than checked for where they point: a link followed by a member written through it
    # escapes the folder, and checking chains of links is what `tarfile`'s own filters got wrong
    # (CVE-2025-4517).
    if member.issym():
        return f"is a symbolic link (to {member.linkname!r})"
    if member.islnk():
        return f"is a hard link (to {member.linkname!r})"
    if not (member.isfile() or member.isdir()):
        return "is not a regular file or folder (a device, FIFO or other special file)"
    return ""


CONFIG_NAME = "config.json"


def safe_extract(archive_file: Union[str, "os.PathLike[str]"], destination: str) -> None:
    """
    Extracts the gzip-compressed tar `archive_file` into `destination` after checking every
    member: only regular files and folders with relative paths that stay inside `destination`,
    and a `config.json` among them. Raises a `ConfigurationError` naming the archive (and the
    member) otherwise, extracting nothing.
    """
    try:
        with tarfile.open(archive_file, "r:gz") as archive:
            members = archive.getmembers()
            for member in members:
                problem = _member_problem(member)
                if problem:
                    raise ConfigurationError(
                        f"Refusing to extract the model archive {archive_file}: its member "
                        f"{member.name!r} {problem}. A model archive holds only files and "
                        "folders with relative paths (config.json, weights.th, vocabulary/, "
                        "as written by `allennlp train`); do not load an archive from a source "
                        "you do not trust, and re-create it from its serialization directory."
                    )
            names = {os.path.normpath(member.name) for member in members if member.isfile()}
            if CONFIG_NAME not in names:
                raise ConfigurationError(
                    f"{archive_file} has no {CONFIG_NAME}: not a model archive made by `allennlp "
                    "train`. Give the model.tar.gz that `allennlp train` writes in its "
                    "serialization directory (or that directory itself)."
                )
            if hasattr(tarfile, "data_filter"):  # Python >= 3.8.17 / 3.11.4: a second guard
                archive.extractall(destination, members=members, filter="data")
            else:
                archive.extractall(destination, members=members)
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as error:
        raise ConfigurationError(
            f"{archive_file} is not a readable model archive ({type(error).__name__}: {error}). "
            "Expected a gzip-compressed tar file, such as the model.tar.gz that `allennlp "
            "train` writes in its serialization directory (or that directory itself)."
        ) from None


# The temporary folder each archive was extracted to -> that archive, so that a refusal of a
# file in it (fix 4) names the user's archive, not a temporary path that is gone by the time the
# message is read. An entry leaves with its folder (`cleanup`) or stays: a few short strings.
_EXTRACTED_FROM: Dict[str, str] = {}


@contextlib.contextmanager
def _safe_extracted_archive(resolved_archive_file: str, cleanup: bool = True) -> Iterator[str]:
    """`allennlp.models.archival.extracted_archive`, extracting through `safe_extract`."""
    tempdir = tempfile.mkdtemp()
    _EXTRACTED_FROM[os.path.abspath(tempdir)] = str(resolved_archive_file)
    try:
        logger.info(f"extracting archive file {resolved_archive_file} to temp dir {tempdir}")
        safe_extract(resolved_archive_file, tempdir)
    except BaseException:
        # `load_archive` asks for cleanup=False and removes the folder itself, but only once it
        # has been handed the folder: a refused archive must not leave it behind.
        shutil.rmtree(tempdir, ignore_errors=True)
        _EXTRACTED_FROM.pop(os.path.abspath(tempdir), None)
        raise
    try:
        yield tempdir
    finally:
        if cleanup:
            logger.info(f"removing temporary unarchived model dir at {tempdir}")
            shutil.rmtree(tempdir, ignore_errors=True)
            _EXTRACTED_FROM.pop(os.path.abspath(tempdir), None)


def _where_from(f: Any) -> str:
    """`f` as a user knows it: `weights.th in the archive runs/x/model.tar.gz` for a file that
    `_safe_extracted_archive` extracted, else the path itself."""
    try:
        path = os.path.abspath(os.fspath(f))
    except TypeError:  # a buffer
        return str(f)
    for folder, archive in _EXTRACTED_FROM.items():
        if path.startswith(folder + os.sep):
            return f"{os.path.relpath(path, folder)} in the archive {archive}"
    return str(f)


def _patch_archive_extraction() -> None:
    from allennlp.models import archival

    # `load_archive` and the `pretrained` initializer look the function up in this module when
    # they run, so replacing the module attribute covers both.
    archival.extracted_archive = _safe_extracted_archive


_patch_archive_extraction()


def _check_data_tarfile(tar_file: tarfile.TarFile) -> None:
    """
    The member check of `cached_path(..., extract_archive=True)` (data archives, e.g. for
    AllenNLP's sharded reader): `cached_path`'s own `check_tarfile` compares paths with
    `os.path.commonprefix`, character by character, so a member `../pathtest-x/file` passes it
    and lands beside the extraction folder. Same rules as for model archives.
    """
    for member in tar_file.getmembers():
        problem = _member_problem(member)
        if problem:
            raise ConfigurationError(
                f"Refusing to extract the archive {tar_file.name}: its member {member.name!r} "
                f"{problem}. An archive to extract may hold only files and folders with "
                "relative paths; do not use an archive from a source you do not trust."
            )


def _patch_cached_path_extraction() -> None:
    from cached_path import _cached_path

    _cached_path.check_tarfile = _check_data_tarfile  # looked up there when extracting


_patch_cached_path_extraction()


# ---- 4. weights_only loading ----------------------------------------------------------------

_TORCH_LOAD_HAS_WEIGHTS_ONLY = "weights_only" in inspect.signature(torch.load).parameters


class _WeightsOnlyTorch:
    """
    The `torch` module as our copy of AllenNLP's `read_state_dict` sees it: everything is
    torch's own, except that `load` passes `weights_only=True` (tensors and plain containers
    only: no pickled code runs) and says which file it refused.
    """

    def __getattr__(self, name: str) -> Any:
        return getattr(torch, name)

    @staticmethod
    def load(f: Any, *args: Any, **kwargs: Any) -> Any:
        if not _TORCH_LOAD_HAS_WEIGHTS_ONLY:  # torch < 1.13 has no safe mode
            return torch.load(f, *args, **kwargs)
        kwargs["weights_only"] = True
        try:
            return torch.load(f, *args, **kwargs)
        except Exception as error:
            refusal = _weights_refusal(f, error)
            if refusal is None:
                raise
            raise refusal from None


# How a file that `torch.save` wrote starts: its zip format, or a pickle (protocol 2 and up) in
# the legacy format.
_TORCH_FILE_STARTS = (b"PK\x03\x04", b"\x80")
# torch's own wording around the reason of a weights-only refusal, which suggests
# `weights_only=False`: left out of our message.
_TORCH_REFUSAL_NOISE = (
    "Weights only load failed",
    "Please file an issue",
    "Check the documentation",
)


def _torch_reason(error: Exception) -> str:
    """The line of `error` that says what torch.load found, without its own advice."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    reasons = [line for line in lines if not line.startswith(_TORCH_REFUSAL_NOISE)]
    return (reasons or lines or ["no reason given"])[0]


def _weights_refusal(f: Any, error: Exception) -> Any:
    """
    The `ConfigurationError` for `torch.load(f, weights_only=True)` failing with `error`, or
    `None` to let `error` through: a file that does not start as torch's files do is not a
    weights file (plain bytes, a text), whatever torch says about it; in one that does, a
    weights-only refusal means pickled objects other than tensors.
    """
    try:
        with open(f, "rb") as handle:
            head = handle.read(8)
    except (OSError, TypeError):  # not a path: a buffer, as torch.load also takes
        head = None
    if head is not None and not head.startswith(_TORCH_FILE_STARTS) and not tarfile.is_tarfile(f):
        starts = (
            f"starts with {head!r}, neither torch's zip format nor a pickle" if head else "is empty"
        )
        return ConfigurationError(
            f"The weights file {_where_from(f)} is not a torch weights file: it {starts} "
            f"(torch.load: {type(error).__name__}: {_torch_reason(error)}). An archive that "
            "`allennlp train` wrote holds the weights as `torch.save` writes them: this one was "
            "changed or made by hand; use the run's own model.tar.gz."
        )
    if not isinstance(error, pickle.UnpicklingError):
        return None
    return ConfigurationError(
        f"Refusing to load the weights file {_where_from(f)}: it holds pickled objects other "
        f"than tensors, which could run code ({_torch_reason(error)}). A weights file written "
        "by `allennlp train` holds only a state dict of tensors; do not load weights from a "
        "source you do not trust."
    )


def load_weights(f: Any, **kwargs: Any) -> Any:
    """`torch.load(f, weights_only=True, **kwargs)`, as `read_state_dict` reads weights here."""
    return _WeightsOnlyTorch.load(f, **kwargs)


def _weights_only_read_state_dict() -> None:
    from allennlp.nn import util as nn_util

    original = nn_util.read_state_dict
    if getattr(original, "_allennlp_tune_weights_only", False):
        return
    # The same code with `torch` bound to `_WeightsOnlyTorch`: AllenNLP's prefix and `ignore`
    # handling stay exactly as they are, only its single `torch.load` call changes.
    namespace = dict(original.__globals__, torch=_WeightsOnlyTorch())
    patched = types.FunctionType(
        original.__code__, namespace, original.__name__, original.__defaults__
    )
    patched.__kwdefaults__ = original.__kwdefaults__
    patched.__doc__ = original.__doc__
    patched._allennlp_tune_weights_only = True  # type: ignore[attr-defined]
    nn_util.read_state_dict = patched  # `Model._load` calls `util.read_state_dict`
    # Modules that imported the function by name before this ran.
    for module_name in (
        "allennlp.modules.transformer.transformer_module",
        "allennlp.commands.diff",
    ):
        module = sys.modules.get(module_name)
        if module is not None and getattr(module, "read_state_dict", None) is original:
            module.read_state_dict = patched  # type: ignore[attr-defined]


_weights_only_read_state_dict()


# ---- 10. `allennlp predict`'s input file ------------------------------------------------------


def _predict_json_lines(self) -> Iterator[Any]:
    """`_PredictManager._get_json_data`, reading the input file as UTF-8 line by line, so that
    bytes that do not decode, and a missing file, are errors naming the file and the line."""
    from allennlp.common.file_utils import cached_path, open_compressed

    if self._input_file == "-":
        for line in sys.stdin:
            if not line.isspace():
                yield self._predictor.load_line(line)
        return
    try:
        input_file = cached_path(self._input_file)
    except FileNotFoundError:
        raise ConfigurationError(
            f"The input file {self._input_file} does not exist. Expected a file of JSON lines "
            "(one input a line), or - for standard input."
        ) from None
    with open_compressed(input_file, "rb", encoding=None) as file_input:
        for line_number, raw in enumerate(file_input, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise ConfigurationError(
                    f"{self._input_file}, line {line_number}: bytes that are not valid UTF-8 "
                    f"({error.reason} at byte {error.start} of the line). Expected a UTF-8 file "
                    "of JSON lines: re-encode it (e.g. `iconv -f latin1 -t utf-8`)."
                ) from None
            if not line.isspace():
                yield self._predictor.load_line(line)


def _patch_predict_input() -> None:
    from allennlp.commands import predict

    predict._PredictManager._get_json_data = _predict_json_lines


_patch_predict_input()


# ---- 16. the test split, unread in training ---------------------------------------------------


def _patch_unread_test_split() -> None:
    """`TrainModel.from_partial_objects` without the test data loader unless the run evaluates
    on test or builds its vocabulary from it (fix 16)."""
    import functools

    from allennlp.commands.train import TrainModel

    original = TrainModel.from_partial_objects.__func__  # type: ignore[attr-defined]
    if getattr(original, "_tune_unread_test", False):
        return

    @functools.wraps(original)
    def from_partial_objects(cls, *args: Any, **kwargs: Any) -> Any:
        # No `datasets_for_vocab_creation`: AllenNLP builds the vocabulary from every split.
        vocabulary_splits = kwargs.get("datasets_for_vocab_creation")
        reads_test = vocabulary_splits is None or "test" in vocabulary_splits
        if not kwargs.get("evaluate_on_test", False) and not reads_test:
            kwargs["test_data_path"] = None
        return original(cls, *args, **kwargs)

    from_partial_objects._tune_unread_test = True  # type: ignore[attr-defined]
    TrainModel.from_partial_objects = classmethod(from_partial_objects)  # type: ignore


_patch_unread_test_split()
