"""The finder that applies the fixes: which module gets which fix (`_HOOKS`), and the meta-path
finder that wraps those modules' `exec_module` with it. `allennlp_tune_preimport.install` puts it
on `sys.meta_path` only when AllenNLP is first imported."""

import sys

from allennlp_tune_preimport.cli import _after_allennlp_commands, _patch_plugins
from allennlp_tune_preimport.lazy import (
    _ALLENNLP_AUC,
    _ALLENNLP_EVALB,
    _ALLENNLP_SPEARMAN,
    _MODELS_ONTONOTES,
    _MODELS_SST,
    _TRANSFORMERS_METRICS,
    _lazy_loaded,
    _LazyTorchvision,
    _loaded_submodule_spec,
)
from allennlp_tune_preimport.quiet import _QuietGoogleVersionSupport, _QuietPkgResources
from allennlp_tune_preimport.stack import (
    _patch_cached_transformers,
    _patch_huggingface_hub,
    _patch_tokenization_utils_base,
    _patch_transformers,
    _QuietNltkDownload,
)

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


def install_finder() -> None:
    """Puts the finder first on `sys.meta_path` (once)."""
    if any(isinstance(f, _PreImportFinder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _PreImportFinder())


def apply_to_loaded() -> None:
    """Applies the after-import fixes to those of the modules that are already imported."""
    for name, (_around, after) in _HOOKS.items():
        module = sys.modules.get(name)
        if module is not None and after is not None:
            after(module)
