"""
For scripts/device/gpu_check.sh only, never installed with the package: stand-ins for the
packages that AllenNLP imports at module level but a MiniLM training run never calls (cloud
storage clients, NLTK, and spaCy unless site_spacy is carried), so that the device machine,
which reaches no package index, needs no 80 MB of their wheels. `DEV_STUBS` names them.
"""

import importlib.abc
import importlib.machinery
import os
import sys
import types

STUBS = tuple(
    os.environ.get(
        "DEV_STUBS",
        "spacy,thinc,boto3,botocore,google.cloud,google.api_core,"
        "google.auth,beaker,nltk,word2number,rouge,sacremoses,ftfy",
    ).split(",")
)


class _Anything(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _make(name)

    def __call__(cls, *args, **kwargs):
        return cls

    def __iter__(cls):
        return iter(())


def _make(name):
    return _Anything(name, (), {})


class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _make(name)


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        if any(fullname == s or fullname.startswith(s + ".") for s in STUBS):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []
        module.__version__ = "0.0.0"
        return module

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _Finder())
