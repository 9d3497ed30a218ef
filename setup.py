from setuptools import find_packages, setup

# install_requires states what allennlp-tune really needs. AllenNLP 2.10.1 itself declares
# torch<1.13 and transformers<4.21, which cannot be installed on Python >= 3.11: use the pinned
# lock (`make install`, requirements/lock.txt) for a modern stack. In an existing AllenNLP 2.10
# environment (Python <= 3.10) `pip install -e .` works as usual.
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
        "peft>=0.17",
    ],
    license="Apache-2.0",
)
