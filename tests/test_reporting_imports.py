"""
Importing `allennlp_tune.reporting` and `allennlp_tune.planning` changes nothing in AllenNLP.

Both rooms only read runs and print plans and reports: a module of theirs that patched a class
of AllenNLP or registered a component would change what `allennlp train` does in any process
that made a report first. The check runs in a fresh interpreter: it imports AllenNLP with its
trainer and checkpointer, takes a snapshot of AllenNLP, imports every module of the two rooms,
and lists what differs from the snapshot:

- any attribute of a loaded `allennlp` module, or of a class defined in one, that is now another
  object or is gone, or that is new and not a submodule (patched functions, methods, settings);
- `Registrable._registry`: a base class, a name or a registered class added, removed or changed.

The rooms are imported under a bare `allennlp_tune` package whose `__init__` does not run: the
package's `__init__` changes AllenNLP by design (the compatibility fixes, every registration),
and through the commands it imports reporting modules itself, so a snapshot taken after it
would already hold what is to be checked. What the rooms import from lower rooms (`rundir`,
`quiet`) counts as theirs.

Modules of AllenNLP that only the rooms' imports would load are not in the snapshot (their
classes have no "before"); AllenNLP's start loads a few hundred, and the rooms load none beyond
them today.

The same check on a probe module that patches `Checkpointer`, sets an attribute on
`GradientDescentTrainer`, replaces a function of `allennlp.common.util` and registers a model
must report all four, so the test can fail.
"""

import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path
from typing import List

REPO = Path(__file__).resolve().parents[1]
ROOMS = ("allennlp_tune.reporting", "allennlp_tune.planning")

# Run as `python -c CHECK module...`: prints a JSON list of the differences the imports made.
CHECK = r"""
import importlib
import importlib.util
import json
import sys
import types

import allennlp
import allennlp.training.checkpointer
import allennlp.training.gradient_descent_trainer
from allennlp.common import Registrable

# The package bare: its `__init__` (compat fixes, every registration, and the commands, which
# import reporting modules themselves) does not run, so only the imported modules' own code
# (and the lower rooms they import) can change anything after the snapshot.
spec = importlib.util.find_spec("allennlp_tune")
sys.modules["allennlp_tune"] = importlib.util.module_from_spec(spec)


def allennlp_modules():
    return {
        name: module
        for name, module in list(sys.modules.items())
        if isinstance(module, types.ModuleType) and name.split(".")[0] == "allennlp"
    }


def snapshot():
    # Objects themselves, not ids, so that a replaced object cannot hand its id to its successor.
    attributes = {}
    for name, module in allennlp_modules().items():
        for attribute, value in list(vars(module).items()):
            attributes[f"{name}.{attribute}"] = (name, value)
            if isinstance(value, type) and value.__module__ == name:
                for member, inner in list(vars(value).items()):
                    attributes[f"{name}.{attribute}.{member}"] = (name, inner)
    registry = {
        base: {name: (entry[0], entry[1]) for name, entry in names.items()}
        for base, names in Registrable._registry.items()
    }
    return attributes, registry


def title(cls):
    return f"{cls.__module__}.{cls.__qualname__}"


def differences(before, after):
    (attributes, registry), (attributes_now, registry_now) = before, after
    found = []
    for key, (_, value) in attributes.items():
        if key not in attributes_now:
            found.append(f"removed: {key}")
        elif attributes_now[key][1] is not value:
            found.append(f"replaced: {key}")
    for key, (module_name, value) in attributes_now.items():
        if key in attributes or module_name not in before_modules:
            continue  # a module loaded only now: its own names are not a change
        if isinstance(value, types.ModuleType) and value.__name__ == key:
            continue  # a submodule loaded by the imports: `package.sub` is now set
        found.append(f"added: {key}")
    for base in set(registry) | set(registry_now):
        names, names_now = registry.get(base, {}), registry_now.get(base, {})
        for name in set(names) | set(names_now):
            if names.get(name) != names_now.get(name):
                was, now = names.get(name), names_now.get(name)
                found.append(
                    f"registry of {title(base)}: {name!r} "
                    f"{title(was[0]) if was else None} -> {title(now[0]) if now else None}"
                )
    return sorted(found)


before_modules = set(allennlp_modules())
before = snapshot()
for module in sys.argv[1:]:
    importlib.import_module(module)
print(json.dumps(differences(before, snapshot())))
"""

# Patches Checkpointer, sets an attribute on the trainer, replaces a module's function and
# registers a model: all must show.
PROBE = """
from allennlp.common import util
from allennlp.models import Model
from allennlp.training.checkpointer import Checkpointer
from allennlp.training.gradient_descent_trainer import GradientDescentTrainer


def save_checkpoint(self, trainer):
    pass


Checkpointer.save_checkpoint = save_checkpoint
GradientDescentTrainer.probe_setting = True
util.prepare_environment = save_checkpoint


@Model.register("reporting-imports-probe")
class ProbeModel(Model):
    pass
"""


def room_modules() -> List[str]:
    """Every module of the rooms, found on disk (so a new module is checked without a change)."""
    names = []
    for room in ROOMS:
        names.append(room)
        folder = REPO.joinpath(*room.split("."))
        names.extend(info.name for info in pkgutil.walk_packages([str(folder)], room + "."))
    return names


def import_differences(modules: List[str], path: Path = REPO) -> List[str]:
    """What importing `modules` (in a fresh interpreter, after AllenNLP) changed in AllenNLP."""
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(REPO), str(path)] + [p for p in [environment.get("PYTHONPATH")] if p]
    )
    done = subprocess.run(
        [sys.executable, "-c", CHECK, *modules],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_rooms_modules_are_all_found():
    modules = room_modules()
    assert "allennlp_tune.reporting.paired" in modules
    assert "allennlp_tune.reporting.sequential" in modules
    assert "allennlp_tune.planning.plan" in modules


def test_importing_reporting_and_planning_changes_nothing_in_allennlp():
    assert import_differences(room_modules()) == []


def test_the_check_sees_a_module_that_patches_allennlp(tmp_path):
    (tmp_path / "reporting_imports_probe.py").write_text(PROBE)
    found = import_differences(["reporting_imports_probe"], tmp_path)
    assert "replaced: allennlp.training.checkpointer.Checkpointer.save_checkpoint" in found
    trainer = "allennlp.training.gradient_descent_trainer.GradientDescentTrainer"
    assert f"added: {trainer}.probe_setting" in found
    assert "replaced: allennlp.common.util.prepare_environment" in found
    assert any("'reporting-imports-probe'" in line and "ProbeModel" in line for line in found)


def test_importing_the_plugin_loads_neither_reporting_nor_planning():
    """Every `allennlp` command imports `allennlp_tune`; the report and the plan are loaded only
    by the commands that use them (tune-compare brings its seed rounds in when it runs them)."""
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(REPO)] + [p for p in environment.get("PYTHONPATH", "").split(os.pathsep) if p]
    )
    script = (
        "import sys, allennlp_tune\n"
        "print(sorted(m for m in sys.modules if m.startswith(("
        "'allennlp_tune.reporting', 'allennlp_tune.planning'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout
