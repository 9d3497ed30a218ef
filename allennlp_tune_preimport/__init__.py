"""allennlp-tune's start-up hook: the compatibility fixes that must act before AllenNLP imports
`transformers` and `huggingface_hub` (see `allennlp_tune/compat.py`, fixes 5 to 9), the
`allennlp` command line's short errors (fix 11), which must see the command line before
AllenNLP parses it, and what acts on AllenNLP's own modules as they load: the installed plugin's
discovery (12), a start without warnings or INFO lines (13), a lazy torchvision (14) and
SciPy, scikit-learn and NLTK loaded when a metric first uses them (15).

Loaded by the one line of `allennlp_tune.pth`, which pip puts in site-packages with the package
(editable or not), so it runs at every interpreter start in that environment: `allennlp ...`,
`python -m allennlp ...`, `python -c "import allennlp"` and the test suite alike. It therefore
does as little as it can there: `install()` puts one finder on `sys.meta_path` that waits for
`allennlp` and finds nothing itself. A Python process that never imports AllenNLP is left as it
was (no module wrapped, no fix applied, `sys.excepthook` untouched) and imports nothing of this
package but this file. When `allennlp` is first imported, that finder steps aside and puts the
finder of the fixes in its place (`finder.py`): it waits for the modules the fixes are for
(`finder._HOOKS`), lets the normal finders locate each, and wraps its `exec_module`, so the fix
runs just before or just after the module's own code, once; fixes for modules already imported
by then (a program that imported transformers first) are applied at once (`apply_to_loaded`).
`ALLENNLP_TUNE_NO_PREIMPORT=1` turns the hook off (to see AllenNLP unpatched).

The fixes, by concern: `stack.py` (5-9: huggingface_hub, transformers, nltk), `cli.py` (11-13:
the `allennlp` command line), `quiet.py` (13: import-time warnings), `lazy.py` (14-15: modules
loaded when first used), `finder.py` (which module gets which fix, and the finder).

This is a top-level package, not `allennlp_tune._preimport`, because importing a subpackage
imports its parent first, and `allennlp_tune/__init__.py` imports AllenNLP itself. `install()`
and `install_fixes()` are idempotent: `allennlp_tune.compat` calls `install_fixes()`, so
importing the plugin from a source tree without the `.pth` still fixes what has not been
imported yet (and `apply_to_loaded()` what has).
"""

import sys

__all__ = ["install", "install_fixes", "apply_to_loaded"]

# The one module whose import wakes the fixes up.
TRIGGER = "allennlp"


def _disabled() -> bool:
    import os

    return os.environ.get("ALLENNLP_TUNE_NO_PREIMPORT", "") not in ("", "0")


class _WaitForAllennlp:
    """A meta-path finder that finds nothing: on the first import of `allennlp` it takes itself
    off `sys.meta_path` and installs the fixes' finder (`install_fixes`), then lets the normal
    finders find `allennlp`."""

    _allennlp_tune_preimport = True

    def find_spec(self, name, path=None, target=None):
        if name != TRIGGER:
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        install_fixes()
        return None


def install() -> None:
    """Puts the finder that waits for `allennlp` first on `sys.meta_path` (once; not with
    ALLENNLP_TUNE_NO_PREIMPORT=1). Where AllenNLP is imported already, installs the fixes."""
    if _disabled():
        return
    if any(getattr(f, "_allennlp_tune_preimport", False) for f in sys.meta_path):
        return
    if TRIGGER in sys.modules:
        install_fixes()
        return
    sys.meta_path.insert(0, _WaitForAllennlp())


def install_fixes() -> None:
    """Puts the fixes' finder first on `sys.meta_path` (once; not with
    ALLENNLP_TUNE_NO_PREIMPORT=1) and applies the after-import fixes to modules already
    imported."""
    if _disabled():
        return
    from allennlp_tune_preimport import finder

    finder.install_finder()
    finder.apply_to_loaded()


def apply_to_loaded() -> None:
    """Applies the after-import fixes to those of the modules that are already imported."""
    from allennlp_tune_preimport import finder

    finder.apply_to_loaded()
