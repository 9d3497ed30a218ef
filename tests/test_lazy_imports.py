"""The lazy torchvision of the start-up hook (allennlp_tune/compat.py, fix 14), and its deferred
SciPy, scikit-learn and NLTK names (fix 15).

`allennlp.data.image_loader`, which every `allennlp` command imports, gets a torchvision whose
code runs on first use: the plugin's commands start without torchvision's models and ops (and
`torch._dynamo`, which they import), and AllenNLP's image loader still gets the real thing.
AllenNLP's metrics, transformers' GLUE metrics and allennlp-models' SST and OntoNotes readers
get stand-ins for the SciPy, scikit-learn and NLTK names they import, which load the real ones
when first called: the commands start without those three libraries, and the metrics and
readers compute what they computed before.
"""

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from allennlp_tune_preimport import finder
from allennlp_tune_preimport.lazy import _defer, _DeferredModule, _LazyModule, install_lazy_module

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A package `lazy_probe_pkg` that counts how often its code runs, with a submodule."""
    root = tmp_path / "lazy_probe_pkg"
    root.mkdir()
    (root / "__init__.py").write_text(
        "import builtins\n"
        "builtins.lazy_probe_runs = getattr(builtins, 'lazy_probe_runs', 0) + 1\n"
        "VALUE = object()\n"
    )
    (root / "sub.py").write_text(
        "import builtins\n"
        "builtins.lazy_probe_sub_runs = getattr(builtins, 'lazy_probe_sub_runs', 0) + 1\n"
        "from lazy_probe_pkg import VALUE\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import builtins

    monkeypatch.setattr(builtins, "lazy_probe_runs", 0, raising=False)
    monkeypatch.setattr(builtins, "lazy_probe_sub_runs", 0, raising=False)
    yield builtins
    for name in ("lazy_probe_pkg", "lazy_probe_pkg.sub"):
        sys.modules.pop(name, None)


def test_the_code_runs_once_on_first_use_in_the_same_module_object(package):
    assert install_lazy_module("lazy_probe_pkg")
    lazy = sys.modules["lazy_probe_pkg"]
    assert type(lazy) is _LazyModule
    import lazy_probe_pkg  # an import statement reads __spec__: it does not run the code

    assert lazy_probe_pkg is lazy and package.lazy_probe_runs == 0
    value = lazy_probe_pkg.VALUE
    assert package.lazy_probe_runs == 1 and type(lazy_probe_pkg) is types.ModuleType
    assert lazy_probe_pkg.VALUE is value and sys.modules["lazy_probe_pkg"] is lazy
    assert not install_lazy_module("lazy_probe_pkg")  # imported already: left alone


def test_importing_a_submodule_runs_the_package_first(package):
    install_lazy_module("lazy_probe_pkg")
    import lazy_probe_pkg.sub

    assert (package.lazy_probe_runs, package.lazy_probe_sub_runs) == (1, 1)
    assert lazy_probe_pkg.sub.VALUE is lazy_probe_pkg.VALUE


def test_a_submodule_that_the_package_imports_itself_runs_once(package, tmp_path):
    # As torchvision's `__init__` imports `torchvision.ops`: `import torchvision.ops` runs the
    # package, which imports the submodule; the outer import must not run it a second time.
    init = tmp_path / "lazy_probe_pkg" / "__init__.py"
    init.write_text(init.read_text() + "from lazy_probe_pkg import sub\n")
    install_lazy_module("lazy_probe_pkg")
    import lazy_probe_pkg.sub

    assert (package.lazy_probe_runs, package.lazy_probe_sub_runs) == (1, 1)
    sub = sys.modules["lazy_probe_pkg.sub"]
    assert lazy_probe_pkg.sub is sub and sub.__spec__.loader is sub.__loader__
    assert sub.__spec__.origin == str(tmp_path / "lazy_probe_pkg" / "sub.py")


def test_a_failing_module_leaves_sys_modules_as_a_failed_import_does(package, tmp_path):
    (tmp_path / "lazy_probe_pkg" / "__init__.py").write_text("raise RuntimeError('broken')\n")
    install_lazy_module("lazy_probe_pkg")
    lazy = sys.modules["lazy_probe_pkg"]
    with pytest.raises(RuntimeError, match="broken"):
        lazy.anything  # noqa: B018 (the access is the test)
    assert "lazy_probe_pkg" not in sys.modules


def test_a_module_that_is_not_installed_is_not_faked():
    assert not install_lazy_module("no_such_module_for_allennlp_tune")
    assert "no_such_module_for_allennlp_tune" not in sys.modules
    assert finder._HOOKS["allennlp.data.image_loader"][0] is not None


@pytest.fixture
def library(tmp_path, monkeypatch):
    """A package `defer_probe_lib` with a function, a class and a submodule, that counts how
    often its code runs, and a module `defer_probe_user` that imports names from it."""
    root = tmp_path / "defer_probe_lib"
    root.mkdir()
    (root / "__init__.py").write_text(
        "import builtins\n"
        "builtins.defer_probe_runs = getattr(builtins, 'defer_probe_runs', 0) + 1\n"
        "def double(x, *, plus=0):\n    return 2 * x + plus\n"
        "class Node:\n"
        "    def __init__(self, label):\n        self.label = label\n"
        "    @classmethod\n"
        "    def leaf(cls):\n        return cls('leaf')\n"
    )
    (root / "stats.py").write_text("def mean(xs):\n    return sum(xs) / len(xs)\n")
    (tmp_path / "defer_probe_user.py").write_text(
        "from typing import List\n"
        "from defer_probe_lib import double, Node\n"
        "import defer_probe_lib.stats as stats\n"
        "def nodes(labels) -> List[Node]:\n    return [Node(label) for label in labels]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import builtins

    monkeypatch.setattr(builtins, "defer_probe_runs", 0, raising=False)
    yield builtins
    for name in ("defer_probe_lib", "defer_probe_lib.stats", "defer_probe_user"):
        sys.modules.pop(name, None)


def test_deferred_names_run_the_library_on_first_use_and_act_as_the_real_ones(library):
    around = _defer(
        {
            "defer_probe_lib": {"double": "function", "Node": "class"},
            "defer_probe_lib.stats": {},
        }
    )
    with around():
        import defer_probe_user
    assert library.defer_probe_runs == 0  # the import bound stand-ins only
    assert "defer_probe_lib" not in sys.modules and "defer_probe_lib.stats" not in sys.modules

    assert defer_probe_user.double(5, plus=1) == 11 and library.defer_probe_runs == 1
    import defer_probe_lib  # a normal import now, of the module the stand-ins loaded

    assert type(defer_probe_lib) is types.ModuleType and library.defer_probe_runs == 1
    nodes = defer_probe_user.nodes(["a", "b"])
    assert [type(node) for node in nodes] == [defer_probe_lib.Node] * 2
    assert isinstance(nodes[0], defer_probe_user.Node) and nodes[1].label == "b"
    assert issubclass(defer_probe_lib.Node, defer_probe_user.Node)
    assert defer_probe_user.Node.leaf().label == "leaf"  # class attributes come from the real one
    assert isinstance(defer_probe_user.stats, _DeferredModule)
    assert defer_probe_user.stats.mean([1, 2, 6]) == 3
    assert sys.modules["defer_probe_lib.stats"].mean is defer_probe_user.stats.mean


def test_a_library_imported_already_is_bound_as_it_is(library):
    import defer_probe_lib

    with _defer({"defer_probe_lib": {"double": "function", "Node": "class"}})():
        import defer_probe_user
    assert defer_probe_user.double is defer_probe_lib.double
    assert defer_probe_user.Node is defer_probe_lib.Node and library.defer_probe_runs == 1


def test_a_library_that_is_not_installed_gets_no_stand_in(tmp_path, monkeypatch):
    (tmp_path / "defer_probe_missing_user.py").write_text("from no_such_lib_here import f\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="no_such_lib_here"):
        with _defer({"no_such_lib_here": {"f": "function"}})():
            import defer_probe_missing_user  # noqa: F401
    assert "no_such_lib_here" not in sys.modules
    sys.modules.pop("defer_probe_missing_user", None)


# One interpreter, as `allennlp tune-report --help` starts: AllenNLP's `main`, the plugin's
# subcommand, then AllenNLP's image loader used for real.
SCRIPT = r"""
import importlib, os, sys, types
sys.argv = ["allennlp", "tune-report", "--help"]
from allennlp.commands import main
try:
    main(prog="allennlp")
except SystemExit as exit:
    assert exit.code in (0, None), exit.code
heavy = [m for m in ("torchvision.models", "torchvision.ops", "torch._dynamo") if m in sys.modules]
print("after --help:", heavy, type(sys.modules["torchvision"]).__name__, file=sys.stderr)
deferred = [m for m in ("scipy", "scipy.stats", "sklearn", "nltk") if m in sys.modules]
print("deferred libraries loaded after --help:", deferred, file=sys.stderr)
import transformers
# With transformers 5 (the modern lock) torchvision is loaded through transformers while
# AllenNLP starts, before AllenNLP's image loader asks for it (seen in CI's modern lane): the
# lazy module saves nothing there. It does on transformers 4 (the lock and the stock lane).
if int(transformers.__version__.split(".")[0]) < 5:
    assert heavy == [], heavy
    assert deferred == [], deferred

import allennlp.data.image_loader as image_loader
import torchvision.ops  # the first use: runs torchvision's code, which imports torchvision.ops
import torchvision
assert type(torchvision) is types.ModuleType and sys.modules["torchvision"] is torchvision
assert image_loader.torchvision is torchvision
assert torchvision.ops is sys.modules["torchvision.ops"]
assert torchvision.ops.__spec__.loader is torchvision.ops.__loader__
assert torchvision.ops.nms is importlib.import_module("torchvision.ops.boxes").nms
assert torchvision.io.read_image is importlib.import_module("torchvision.io").read_image

from PIL import Image
Image.new("RGB", (5, 3), (255, 0, 0)).save("red.png")
loader = image_loader.TorchImageLoader(resize=False, normalize=False)
images, sizes = loader([os.path.abspath("red.png")])
assert tuple(images.shape) == (1, 3, 32, 32) and sizes.tolist() == [[3, 5]], (images.shape, sizes)
assert abs(float(images[0, 0, 0, 0]) - 255 / 256) < 1e-6

# The metrics and readers whose SciPy / scikit-learn / NLTK names were deferred.
import numpy, torch
from allennlp.training.metrics import Auc, SpearmanCorrelation
from allennlp.training.metrics import evalb_bracketing_scorer
from allennlp_models.classification.dataset_readers import stanford_sentiment_tree_bank
from allennlp_models.common import ontonotes

spearman = SpearmanCorrelation()
spearman(torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0]), torch.tensor([2.0, 1.0, 4.0, 3.0, 5.0]))
assert abs(spearman.get_metric() - 0.8) < 1e-6, spearman.get_metric()
auc = Auc()
auc(torch.tensor([0.1, 0.4, 0.35, 0.8]), torch.tensor([0, 0, 1, 1]))
assert abs(auc.get_metric() - 0.75) < 1e-6, auc.get_metric()
import nltk, sklearn.metrics, scipy.stats
for module in (evalb_bracketing_scorer, ontonotes):
    tree = module.Tree.fromstring("(S (NP (D the) (N cat)) (VP sat))")
    assert type(tree) is nltk.Tree and isinstance(tree, module.Tree), type(tree)
    assert tree.leaves() == ["the", "cat", "sat"]
tree = stanford_sentiment_tree_bank.Tree.fromstring("(3 (2 good) (4 film))")
assert type(tree) is nltk.tree.Tree and tree.label() == "3"
if hasattr(transformers, "glue_compute_metrics"):
    from transformers.data import metrics as glue
    gold, predicted = numpy.array([1.0, 2.0, 3.0, 4.0]), numpy.array([1.5, 1.8, 3.3, 4.1])
    scores = glue.glue_compute_metrics("sts-b", predicted, gold)
    assert abs(scores["pearson"] - scipy.stats.pearsonr(predicted, gold)[0]) < 1e-12, scores
    labels, guesses = numpy.array([1, 0, 1, 1]), numpy.array([1, 0, 0, 1])
    assert glue.glue_compute_metrics("mrpc", guesses, labels)["f1"] == 0.8
    assert glue.glue_compute_metrics("cola", guesses, labels)["mcc"] == (
        sklearn.metrics.matthews_corrcoef(labels, guesses)
    )
print("ok")
"""


def test_a_plugin_command_starts_without_torchvision_and_the_image_loader_still_works(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=tmp_path,
        env=dict(os.environ, HOME=str(tmp_path), HF_HUB_OFFLINE="1"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("ok"), result.stdout[-2000:]
