"""
docs/ARCHITECTURE.md against the tree: its "Sizes" paragraph (the longest function of the
rooms it names and the longest module, each with its length, and the limits) and every file it
names in backticks.
"""

import ast
import re
from pathlib import Path
from typing import List, Tuple

ROOT = Path(__file__).resolve().parent.parent
PAGE = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
PACKAGES = [ROOT / "allennlp_tune", ROOT / "allennlp_tune_preimport"]


def sizes_paragraph() -> str:
    section = PAGE.split("## Sizes", 1)[1].split("\n## ", 1)[0]
    return " ".join(section.split())


def functions(rooms: List[str]) -> List[Tuple[int, str]]:
    found = []
    for room in rooms:
        for path in (ROOT / "allennlp_tune" / room).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    found.append((node.end_lineno - node.lineno + 1, node.name))
    return sorted(found)


def test_the_longest_function_is_the_one_the_page_names():
    claim = re.search(
        r"No function in ((?:`\w+/`(?:, | or )?)+) is over (\d+) lines \(`(\w+)`, at (\d+), "
        r"is the longest\)",
        sizes_paragraph(),
    )
    assert claim, sizes_paragraph()
    rooms = re.findall(r"`(\w+)/`", claim.group(1))
    limit, name, length = int(claim.group(2)), claim.group(3), int(claim.group(4))
    assert sorted(rooms) == ["experiments", "planning", "reporting"]
    found = functions(rooms)
    over = [(lines, function) for lines, function in found if lines > limit]
    assert not over, f"over {limit} lines: {over}"
    assert found[-1][0] == length and name in [f for lines, f in found if lines == length], (
        f"the page says {name} ({length} lines) is the longest; it is {found[-1]}"
    )


def test_the_longest_module_is_the_one_the_page_names():
    claim = re.search(
        r"no module of .* is over (\d+) lines \(`([\w.]+)`, at (\d+), is the longest\)",
        sizes_paragraph(),
    )
    assert claim, sizes_paragraph()
    limit, name, length = int(claim.group(1)), claim.group(2), int(claim.group(3))
    modules = sorted(
        (len(path.read_text(encoding="utf-8").splitlines()), path.name)
        for package in PACKAGES
        for path in package.rglob("*.py")
    )
    over = [(lines, module) for lines, module in modules if lines > limit]
    assert not over, f"over {limit} lines: {over}"
    assert modules[-1] == (length, name), f"the page says {name} ({length}); it is {modules[-1]}"


def test_every_file_the_page_names_exists():
    missing = []
    for named in sorted(set(re.findall(r"`([\w/]+\.py)`", PAGE))):
        candidates = [ROOT / named] + [package / named for package in PACKAGES]
        if "/" not in named:  # a module named by its file alone, in any room
            candidates += [path for package in PACKAGES for path in package.rglob(named)]
        if not any(path.is_file() for path in candidates):
            missing.append(named)
    assert not missing, f"docs/ARCHITECTURE.md names files that do not exist: {missing}"
