"""
The plugin's extras (pyproject.toml): `tune-search` needs `[search]` (optuna; `[postgres]` too
for a postgresql:// --storage), `mode: "lora"` needs `[lora]` (peft). Without them each says
which extra to install, on any stack.
"""

import argparse
import sys
from pathlib import Path

import pytest
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.modules.token_embedders import TokenEmbedder

import allennlp_tune.modules  # noqa: F401  (registers the embedders)
from allennlp_tune.commands.tune_search import search_main

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10 (the stock lane): pytest's own TOML reader
    tomllib = pytest.importorskip("tomli")

BERT = Path(__file__).resolve().parents[1] / "fixtures" / "models" / "bert-cased"


def test_tune_search_without_optuna_names_the_search_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "optuna", None)  # `import optuna` raises ImportError
    with pytest.raises(SystemExit) as exit_info:
        search_main(argparse.Namespace())
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert error.startswith("allennlp tune-search: needs Optuna, which is not installed")
    assert "pip install 'allennlp-tune[search]'" in error
    assert "Traceback" not in error


@pytest.mark.parametrize("kind", ["tune_transformer", "tune_transformer_mismatched"])
def test_lora_without_peft_names_the_lora_extra(monkeypatch, kind):
    monkeypatch.setitem(sys.modules, "peft", None)
    params = Params({"type": kind, "model_name": str(BERT), "mode": "lora"})
    with pytest.raises(ConfigurationError, match=r"pip install 'allennlp-tune\[lora\]'"):
        TokenEmbedder.from_params(params)


def test_pyproject_declares_the_extras():
    with open(BERT.parents[2] / "pyproject.toml", "rb") as file:
        project = tomllib.load(file)["project"]
    extras = project["optional-dependencies"]
    assert extras["search"][0] == "optuna" and extras["lora"] == ["peft>=0.17"]
    assert extras["postgres"] == ["psycopg2-binary"]  # a postgresql:// --storage only
    # Beside AllenNLP 2.10.1 (Python 3.10) SQLAlchemy stays at 2.0.24, which Optuna 5.1's
    # models do not import with: Optuna 5.0 there, any Optuna on the locks' Python 3.11.
    from packaging.requirements import Requirement

    held = [Requirement(line) for line in extras["search"] if line.startswith("optuna<")]
    assert [str(r.specifier) for r in held] == ["<5.1"]
    assert held[0].marker.evaluate({"python_version": "3.10"})
    assert not held[0].marker.evaluate({"python_version": "3.11"})
    assert not [line for line in project["dependencies"] if line.startswith(("peft", "optuna"))]
