"""allennlp-tune's start-up hook: `allennlp_tune.pth`, installed with the package, which puts
`allennlp_tune_preimport`'s finder on `sys.meta_path` (allennlp_tune/compat.py, fixes 5-9)."""

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_python(*args: str, **environment: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args],
        env=dict(os.environ, **environment),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_pth_file_is_installed_in_this_environment():
    pth = Path(sysconfig.get_paths()["purelib"]) / "allennlp_tune.pth"
    assert pth.is_file(), "allennlp_tune.pth is missing: reinstall (pip install --no-deps -e .)"
    assert pth.read_text().strip() == (
        "import allennlp_tune_preimport; allennlp_tune_preimport.install()"
    )


def test_every_interpreter_gets_the_finder_and_nothing_heavy():
    script = (
        "import sys\n"
        "print(any(getattr(f, '_allennlp_tune_preimport', False) for f in sys.meta_path))\n"
        "print(sorted(m for m in ('torch', 'transformers', 'allennlp', 'huggingface_hub', "
        "'nltk', 'allennlp_tune') if m in sys.modules))"
    )
    result = run_python("-c", script)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["True", "[]"]
    off = run_python("-c", script, ALLENNLP_TUNE_NO_PREIMPORT="1")
    assert off.stdout.split("\n")[0] == "False"


def test_a_process_that_never_imports_allennlp_is_not_patched():
    # Before anything is imported, our one finder claims none of the modules the fixes are for
    # (the fixes' finder would wrap huggingface_hub's and transformers' loading); then
    # transformers, huggingface_hub and torch imported without AllenNLP load no fix module and
    # leave the excepthook as it was. Importing AllenNLP wakes the fixes up.
    script = (
        "import sys\n"
        "ours = [f for f in sys.meta_path if getattr(f, '_allennlp_tune_preimport', False)]\n"
        "print(len(ours))\n"
        "print([f.find_spec(n) for f in ours for n in ('huggingface_hub', 'transformers')])\n"
        "import transformers, huggingface_hub, torch\n"
        "print(sorted(m for m in sys.modules if m.startswith('allennlp')))\n"
        "print(sys.excepthook is sys.__excepthook__)\n"
        "import allennlp.common\n"
        "print(sorted(m for m in sys.modules if m.startswith('allennlp_tune_preimport.')))\n"
    )
    result = run_python("-c", script)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert lines[:4] == ["1", "[None, None]", "['allennlp_tune_preimport']", "True"]
    assert "'allennlp_tune_preimport.finder'" in lines[4]


def test_importing_allennlp_puts_the_fixes_finder_in_the_waiting_ones_place():
    script = (
        "import sys\n"
        "import allennlp\n"
        "import allennlp_tune_preimport.finder as finder\n"
        "print(sum(isinstance(f, finder._PreImportFinder) for f in sys.meta_path))\n"
        "print([f for f in sys.meta_path if type(f).__name__ == '_WaitForAllennlp'])\n"
    )
    result = run_python("-c", script)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines() == ["1", "[]"]
    off = run_python("-c", script, ALLENNLP_TUNE_NO_PREIMPORT="1")
    assert off.returncode == 0, off.stderr[-2000:]
    assert off.stdout.splitlines() == ["0", "[]"]


def test_python_dash_m_allennlp_runs():
    # `python -m allennlp` runs allennlp/__main__.py, which no console-script wrapper covers.
    result = run_python("-m", "allennlp", "--help")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "tune-grid" in result.stdout  # and the plugin's subcommands are there


def test_importing_the_plugin_first_works_without_the_pth():
    # A source tree without the .pth: `import allennlp_tune` (--include-package) installs the
    # finder itself before AllenNLP is imported.
    script = (
        "import sys\n"
        "sys.meta_path[:] = [f for f in sys.meta_path\n"
        "                    if not getattr(f, '_allennlp_tune_preimport', False)]\n"
        "import allennlp_tune, allennlp.commands\n"
        "print(any(getattr(f, '_allennlp_tune_preimport', False) for f in sys.meta_path))"
    )
    result = run_python("-c", script)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("True")


def test_a_wheel_carries_the_pth_and_the_hook_module(tmp_path):
    # A non-editable install (`pip install .`, a wheel) puts both at the root of site-packages.
    # Built from a copy of the sources, so that setuptools' build/ folder stays out of the repo.
    source = tmp_path / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(REPO / "allennlp_tune", source / "allennlp_tune", ignore=ignore)
    shutil.copytree(
        REPO / "allennlp_tune_preimport", source / "allennlp_tune_preimport", ignore=ignore
    )
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "--disable-pip-version-check", "-w", str(tmp_path), str(source)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    [wheel] = tmp_path.glob("allennlp_tune-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "allennlp_tune.pth" in names
    assert "allennlp_tune_preimport/__init__.py" in names
    assert "allennlp_tune_preimport/finder.py" in names
    record = next(n for n in names if n.endswith(".dist-info/RECORD"))
    assert "allennlp_tune.pth," in zipfile.ZipFile(wheel).read(record).decode()
