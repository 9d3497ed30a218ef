"""The lazy torchvision of the start-up hook (allennlp_tune/compat.py, fix 14).

`allennlp.data.image_loader`, which every `allennlp` command imports, gets a torchvision whose
code runs on first use: the plugin's commands start without torchvision's models and ops (and
`torch._dynamo`, which they import), and AllenNLP's image loader still gets the real thing.
"""

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

import allennlp_tune_preimport
from allennlp_tune_preimport import _LazyModule, install_lazy_module

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
    assert allennlp_tune_preimport._HOOKS["allennlp.data.image_loader"][0] is not None


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
import transformers
# With transformers 5 (the modern lock) torchvision is loaded through transformers while
# AllenNLP starts, before AllenNLP's image loader asks for it (seen in CI's modern lane): the
# lazy module saves nothing there. It does on transformers 4 (the lock and the stock lane).
if int(transformers.__version__.split(".")[0]) < 5:
    assert heavy == [], heavy

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
