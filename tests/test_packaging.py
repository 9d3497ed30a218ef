"""
Packaging (issue 44): pyproject.toml's PEP 621 metadata against the code, the locks and the
environment that runs the tests.

- requires-python starts at 3.10, the oldest Python CI runs (the stock lane);
- every third-party module that allennlp_tune/ or allennlp_tune_preimport/ imports (at module
  level or inside a function) is declared, in `dependencies` or an extra;
- psycopg2 is only in the `[postgres]` extra, not forced on `[search]` users of SQLite;
- both locks and the installed environment satisfy what is declared;
- the locks keep setuptools below 82 (the release without `pkg_resources`) because py-rouge
  1.1, which allennlp-models imports at every `allennlp` start-up, imports `pkg_resources`.
"""

import ast
import functools
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10 (the stock lane): pytest's own TOML reader
    tomllib = pytest.importorskip("tomli")

REPO = Path(__file__).resolve().parents[1]
SOURCES = [
    *sorted((REPO / "allennlp_tune").rglob("*.py")),
    *sorted((REPO / "allennlp_tune_preimport").glob("*.py")),
]
FIRST_PARTY = {"allennlp_tune", "allennlp_tune_preimport"}
LOCKS = [REPO / "requirements" / "lock.txt", REPO / "requirements" / "lock-modern.txt"]
# An import name -> its distribution, for a distribution that is not installed where the test
# runs (packages_distributions() knows only installed ones: peft is not in the stock lane).
NOT_INSTALLED_NAMES = {"sklearn": "scikit-learn", "yaml": "PyYAML", "psycopg2": "psycopg2-binary"}
# The stock lane's stack (.ci/stock_lane.sh: Python 3.10, `pip install allennlp==2.10.1
# allennlp-models==2.10.1 "numpy<2"`), the oldest CI runs: the lower bounds are these.
STOCK = {
    "allennlp": "2.10.1",
    "allennlp-models": "2.10.1",
    "torch": "1.12.1",
    "transformers": "4.20.1",
    "huggingface-hub": "0.10.1",
    "numpy": "1.26.4",
    "spacy": "3.3.3",
    "cached-path": "1.1.6",
}


def load_project() -> dict:
    with open(REPO / "pyproject.toml", "rb") as file:
        return tomllib.load(file)["project"]


@functools.cache
def third_party_imports() -> dict:
    """Top-level module name -> the files that import it, for every absolute import that is
    neither the standard library nor the plugin itself."""
    found: dict = {}
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in FIRST_PARTY | {"__future__"}:
                    found.setdefault(top, set()).add(path.relative_to(REPO).as_posix())
    return found


@functools.cache
def installed_distributions() -> dict:
    return metadata.packages_distributions()


def distributions_of(module: str) -> set:
    installed = installed_distributions().get(module)
    names = installed or [NOT_INSTALLED_NAMES.get(module, module)]
    return {canonicalize_name(name) for name in names}


def declared(project: dict) -> dict:
    """Canonical distribution name -> where it is declared ('dependencies', '[search]', ...)."""
    where: dict = {}
    groups = {"dependencies": project.get("dependencies", [])}
    for extra, lines in project.get("optional-dependencies", {}).items():
        groups[f"[{extra}]"] = lines
    for group, lines in groups.items():
        for line in lines:
            where.setdefault(canonicalize_name(Requirement(line).name), []).append(group)
    return where


def undeclared(project: dict, imports: dict) -> list:
    names = declared(project)
    return [
        f"{module} ({' or '.join(sorted(distributions_of(module)))}), imported by "
        f"{', '.join(sorted(files))}"
        for module, files in sorted(imports.items())
        if not distributions_of(module) & names.keys()
    ]


def requirements(project: dict, extras: bool = True) -> list:
    lines = list(project["dependencies"])
    if extras:
        for extra_lines in project["optional-dependencies"].values():
            lines += extra_lines
    return [Requirement(line) for line in lines]


def test_requires_python_starts_at_the_oldest_tested_python():
    from packaging.specifiers import SpecifierSet

    requires = SpecifierSet(load_project()["requires-python"])
    assert "3.10" in requires and "3.11" in requires
    assert "3.9" not in requires and "3.8" not in requires


def test_every_third_party_import_is_declared():
    imports = third_party_imports()
    # (the scan itself works: these are imported in the package today)
    assert {"allennlp", "torch", "requests", "optuna", "peft"} <= imports.keys()
    assert undeclared(load_project(), imports) == []


def test_the_import_check_fails_on_a_missing_dependency():
    project = load_project()
    imports = third_party_imports()
    project["dependencies"] = [
        line for line in project["dependencies"] if Requirement(line).name != "requests"
    ]
    project["optional-dependencies"] = {
        extra: lines for extra, lines in project["optional-dependencies"].items() if extra != "lora"
    }
    problems = undeclared(project, imports)
    assert len(problems) == 2
    assert problems[0].startswith("peft (peft), imported by allennlp_tune/modules/")
    assert problems[1].startswith("requests (requests), imported by allennlp_tune/data/fetch.py")


def test_psycopg2_is_only_in_the_postgres_extra():
    project = load_project()
    where = declared(project)
    assert where["psycopg2-binary"] == ["[postgres]"]
    extras = project["optional-dependencies"]
    assert extras["postgres"] == ["psycopg2-binary"]
    search = [canonicalize_name(Requirement(line).name) for line in extras["search"]]
    assert "optuna" in search and not any("psycopg" in name for name in search)


@pytest.mark.parametrize("lock", LOCKS, ids=lambda path: path.name)
def test_the_locks_satisfy_the_declared_requirements(lock):
    pinned = {}
    for line in lock.read_text(encoding="utf-8").splitlines():
        match = re.match(r"([A-Za-z0-9_.\-]+)==(\S+)", line.split("#", 1)[0].strip())
        if match:
            pinned[canonicalize_name(match[1])] = match[2]
    for requirement in requirements(load_project()):
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{requirement} is declared but {lock.name} does not pin it"
        assert requirement.specifier.contains(pinned[name], prereleases=True), (
            f"{lock.name} pins {name}=={pinned[name]}, outside the declared {requirement}"
        )


def test_the_stock_stack_satisfies_the_lower_bounds_and_is_them():
    by_name = {canonicalize_name(r.name): r for r in requirements(load_project(), extras=False)}
    for name, version in STOCK.items():
        specifier = by_name[name].specifier
        assert specifier.contains(version), f"the stock lane's {name} {version} fails {specifier}"
        floors = [Version(s.version) for s in specifier if s.operator in (">=", "==")]
        assert floors, f"{name} has no lower bound; the stock lane runs {version}"
        # no higher than what the stock lane runs, and no lower than its minor release
        assert Version(version).release[:2] <= max(floors).release[:2] <= Version(version).release


def test_the_installed_environment_satisfies_the_dependencies():
    # The locks (`make install`) and the stock lane's stack alike; an extra only where installed.
    project = load_project()
    core = {requirement.name for requirement in requirements(project, extras=False)}
    for requirement in requirements(project):
        try:
            version = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            assert requirement.name not in core, f"{requirement} is not installed"
            continue
        assert requirement.specifier.contains(version, prereleases=True), (requirement, version)


def test_setuptools_stays_below_82_for_py_rouge():
    """The locks pin setuptools 80.9.0: setuptools 82.0.0 removed `pkg_resources`, and py-rouge
    1.1 (allennlp-models' dependency, its last release) does `import pkg_resources`. `allennlp`
    imports every allennlp-models module at start-up (`import_plugins`), narrativeqa imports
    `rouge`, so without `pkg_resources` every `allennlp` command logs "Plugin allennlp_models
    could not be loaded: No module named 'pkg_resources'" and the allennlp-models modules after
    `rc` (tagging's crf_tagger among them) are never registered."""
    for lock in LOCKS:
        (pin,) = re.findall(r"^setuptools==(\S+)", lock.read_text(encoding="utf-8"), re.M)
        assert Version(pin) < Version("82"), f"{lock.name}: setuptools {pin} has no pkg_resources"
    narrativeqa = metadata.distribution("allennlp-models").locate_file(
        "allennlp_models/rc/tools/narrativeqa.py"
    )
    assert re.search(r"^import rouge$", Path(narrativeqa).read_text(encoding="utf-8"), re.M)
    script = (
        "import sys, warnings\n"
        "warnings.simplefilter('ignore')\n"
        "import pkg_resources, rouge\n"  # works here
        "for name in [n for n in sys.modules if n.split('.')[0] in ('rouge', 'pkg_resources')]:\n"
        "    del sys.modules[name]\n"
        "sys.modules['pkg_resources'] = None\n"  # as with setuptools >= 82
        "try:\n"
        "    import rouge\n"
        "except ModuleNotFoundError as error:\n"
        "    print('without:', error.name)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "without: pkg_resources"
