"""
The package's rooms and the one way their imports point: a module imports only from its own
room or from rooms listed before it in `LAYERS`, and no chain of imports comes back to where it
started. Every `import` in a module counts, those inside functions too (a lazy import is still a
dependency; it only loads later).

A module's room is the longest prefix in `LAYERS` that names it. A new package must be placed in
`LAYERS` (the test says which one is missing).
"""

import ast
from pathlib import Path
from typing import Dict, List, Set, Tuple

PACKAGE = Path(__file__).resolve().parent.parent / "allennlp_tune"

# Lowest first. A room may import from itself and from any room above it in this list.
LAYERS: List[str] = [
    "allennlp_tune.compat",  # fixes to AllenNLP and its stack; imports nothing of ours
    "allennlp_tune.host_access",  # every read of a host's private (not the trainer's): a leaf
    "allennlp_tune.config_vars",  # the configs' ext vars and their defaults
    "allennlp_tune.modes",  # run modes, embedder modes and the map between them
    "allennlp_tune.quiet",  # holding back chosen loggers' INFO lines for a block
    "allennlp_tune.rundir",  # the run-folder contract: names, files, Run, tidy
    "allennlp_tune.training.metrics",  # metrics: a leaf library that readers and models use
    "allennlp_tune.data",  # readers, tokenizers, collators, fetch, paths
    "allennlp_tune.modules",  # embedders, layer groups, pair / seq2vec encoders, feature cache
    "allennlp_tune.models",
    "allennlp_tune.predictors",
    "allennlp_tune.testing",  # toy components for tests
    "allennlp_tune.training",  # trainer, callbacks, optimizers, the checkpoint guard
    "allennlp_tune.export",
    "allennlp_tune.analysis",  # probing, EDGE mutual information, plots
    "allennlp_tune.planning",  # the cost model and the plan of a grid or a comparison
    "allennlp_tune.reporting",  # paired bootstrap, sequential looks, overlap, the report
    "allennlp_tune.experiments",  # grid, compare (and its rounds), search: runs training
    "allennlp_tune.commands",  # the `allennlp` subcommands
    "allennlp_tune",  # the package's __init__: applies compat, registers everything
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, name: str) -> Set[str]:
    """The allennlp_tune modules a file imports (absolute and relative, at any depth)."""
    found: Set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            # `from package import module` imports the module.
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {module for module in found if module.split(".")[0] == "allennlp_tune"}


def graph() -> Dict[str, Set[str]]:
    files = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    edges = {}
    for name, path in files.items():
        edges[name] = {module for module in imports_of(path, name) if module in files} - {name}
    return edges


def room_of(module: str) -> str:
    rooms = [room for room in LAYERS if module == room or module.startswith(room + ".")]
    assert rooms, f"{module} is in no room: add its package to LAYERS in {__file__}"
    return max(rooms, key=len)


def test_every_module_has_a_room():
    for module in graph():
        room_of(module)


def test_imports_point_down():
    upward: List[Tuple[str, str]] = []
    for module, imported in graph().items():
        rank = LAYERS.index(room_of(module))
        upward += [(module, other) for other in imported if LAYERS.index(room_of(other)) > rank]
    assert not upward, "imports that point up a room:\n" + "\n".join(
        f"  {a} -> {b}" for a, b in sorted(upward)
    )


def find_cycle(edges: Dict[str, Set[str]]) -> List[str]:
    """One import cycle as a list of modules, or [] (depth-first search)."""
    state: Dict[str, int] = {}  # 1: on the current path, 2: done
    path: List[str] = []

    def visit(module: str) -> List[str]:
        state[module] = 1
        path.append(module)
        for other in sorted(edges.get(module, ())):
            if state.get(other) == 1:
                return path[path.index(other) :] + [other]
            if other not in state:
                cycle = visit(other)
                if cycle:
                    return cycle
        path.pop()
        state[module] = 2
        return []

    for module in sorted(edges):
        if module not in state:
            cycle = visit(module)
            if cycle:
                return cycle
    return []


def without_package_inits(edges: Dict[str, Set[str]]) -> Dict[str, Set[str]]:
    """
    The graph without the edges into a package's `__init__` from inside that package: Python
    runs a package's `__init__` before any module in it, so `pkg/a.py` importing `pkg.b` passes
    through `pkg/__init__.py`, which is no cycle of the code's making.
    """
    inits = {module for module in edges if (PACKAGE.parent / module.replace(".", "/")).is_dir()}
    return {
        module: {
            other for other in imported if not (other in inits and module.startswith(other + "."))
        }
        for module, imported in edges.items()
    }


def test_no_import_cycle():
    cycle = find_cycle(without_package_inits(graph()))
    assert not cycle, "an import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) == []
