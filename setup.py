import os

from setuptools import setup
from setuptools.command.build_py import build_py

# The start-up hook (allennlp_tune/compat.py, "How the fixes are applied"): one line in
# site-packages that runs at interpreter start-up and only puts `allennlp_tune_preimport`'s
# finder on sys.meta_path, so the fixes that must precede AllenNLP's own imports of
# transformers / huggingface_hub act for `allennlp ...` and `python -m allennlp ...` alike.
PTH_NAME = "allennlp_tune.pth"
PTH_LINE = "import allennlp_tune_preimport; allennlp_tune_preimport.install()\n"


class build_py_with_pth(build_py):
    """Also writes `allennlp_tune.pth` at the root of what is installed, as setuptools does for
    its own `distutils-precedence.pth`: into build_lib for a wheel or `pip install .`, and for
    an editable install (`pip install -e .`, PEP 660), whose wheel takes build_lib's modules
    from the source tree instead, straight into the editable wheel's root."""

    def run(self):
        super().run()
        targets = [self.build_lib]
        if getattr(self, "editable_mode", False):
            targets.append(self.get_finalized_command("install").install_lib)
        for folder in targets:
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, PTH_NAME), "w", encoding="utf-8") as pth:
                pth.write(PTH_LINE)

    def get_outputs(self, include_bytecode=True):
        return super().get_outputs(include_bytecode) + [os.path.join(self.build_lib, PTH_NAME)]


# The metadata (name, version, dependencies, extras, packages, package data) is in pyproject.toml
# (PEP 621). What stays here is what must run as code: the build step above, which ships the
# start-up hook's .pth.
setup(cmdclass={"build_py": build_py_with_pth})
