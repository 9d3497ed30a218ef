import os

from setuptools import find_packages, setup
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


# install_requires states what allennlp-tune really needs, and every line of it is satisfied by
# a stock `pip install allennlp==2.10.1 allennlp-models==2.10.1` (Python 3.10: torch 1.12.1,
# transformers 4.20.1), so `pip install -e .` there adds the plugin without upgrading the stack
# (.ci/stock_lane.sh checks this). AllenNLP 2.10.1 itself declares torch<1.13 and
# transformers<4.21, which cannot be installed on Python >= 3.11: use the pinned lock
# (`make install`, requirements/lock.txt, --no-deps; or requirements/lock-modern.txt for
# transformers 5) for a modern stack; the locks hold the extras too.
#
# Extras, for what only some commands need:
# - search: `allennlp tune-search` (Optuna; psycopg2 for a postgresql:// --storage).
# - lora: `mode: "lora"` (peft). An extra, not a requirement, because every peft release (0.1.0
#   on) requires torch>=1.13 and the LoRA injection we use (`inject_adapter_in_model`) arrived in
#   peft 0.6: on a stock AllenNLP 2.10.1 stack (torch 1.12.1) pip would replace torch, breaking
#   AllenNLP's own pin. The lock installs peft 0.21.0.
setup(
    name="allennlp-tune",
    version="0.1.0",
    description="Freeze or fine-tune a pretrained encoder in AllenNLP with one config switch, "
    "and measure the difference (Peters, Ruder & Smith 2019).",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    packages=find_packages(include=["allennlp_tune", "allennlp_tune.*"]),
    py_modules=["allennlp_tune_preimport"],
    cmdclass={"build_py": build_py_with_pth},
    # The Jsonnet library of the training configs (`cell(task, encoder, mode)`) and the shipped
    # task files: `tune-compare` imports them from the installed package.
    package_data={"allennlp_tune": ["configs/*.libsonnet", "configs/tasks/*.jsonnet"]},
    python_requires=">=3.8",
    install_requires=[
        "allennlp==2.10.1",
        "allennlp-models==2.10.1",
        # Up to today's transformers 5 / huggingface_hub 2 through the start-up hook's fixes
        # (requirements/lock-modern.txt); the next major releases are untested.
        "transformers>=4.1,<6",
        "huggingface_hub<3",
        "scipy",
        "scikit-learn",
        "matplotlib",
    ],
    extras_require={
        "search": ["optuna", "psycopg2-binary"],
        "lora": ["peft>=0.17"],
    },
    license="Apache-2.0",
)
