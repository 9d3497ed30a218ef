"""Fixes 11 to 13 for the `allennlp` command line: a user's error in one line (11), the installed
plugin discovered without a plugins file (12), and AllenNLP's plugin lines held back while it
parses the command line (13). `verbose_requested` is what the plugin's commands read to show a
traceback (`-v`, `--verbose`, ALLENNLP_TUNE_VERBOSE=1)."""

import sys

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
