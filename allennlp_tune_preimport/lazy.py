"""Fixes 14 and 15, a quick start (speed, not compatibility): torchvision, SciPy, scikit-learn
and NLTK, which AllenNLP and allennlp-models import at the top of modules every `allennlp`
command imports, are loaded only when something uses them."""

import sys

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
