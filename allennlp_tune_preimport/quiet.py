"""Fix 13's warnings: two libraries that AllenNLP and allennlp-models import warn at import about
things no user of the plugin can act on (`pkg_resources`' deprecation, Google's Python support
calendar). Each context manager is put around that one module's code by the finder, and ignores
that one warning, attributed to that module (not with `-v` / ALLENNLP_TUNE_VERBOSE=1)."""

from allennlp_tune_preimport.cli import verbose_requested


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
