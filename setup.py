from setuptools import find_packages, setup

# install_requires states what allennlp-tune really needs, and every line of it is satisfied by
# a stock `pip install allennlp==2.10.1 allennlp-models==2.10.1` (Python 3.10: torch 1.12.1,
# transformers 4.20.1), so `pip install -e .` there adds the plugin without upgrading the stack
# (.ci/stock_lane.sh checks this). AllenNLP 2.10.1 itself declares torch<1.13 and
# transformers<4.21, which cannot be installed on Python >= 3.11: use the pinned lock
# (`make install`, requirements/lock.txt, --no-deps) for a modern stack; it holds the extras too.
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
    # The Jsonnet library of the training configs (`cell(task, encoder, mode)`) and the shipped
    # task files: `tune-compare` imports them from the installed package.
    package_data={"allennlp_tune": ["configs/*.libsonnet", "configs/tasks/*.jsonnet"]},
    python_requires=">=3.8",
    install_requires=[
        "allennlp==2.10.1",
        "allennlp-models==2.10.1",
        "transformers>=4.1,<4.44",
        "huggingface_hub<1.0",
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
