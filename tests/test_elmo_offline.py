"""
`tune_elmo` without its files: offline with the configs' default ELMo URLs (issue #21: a bare
`requests.ConnectionError`), or a local path that does not exist. The error names the file and
the variables to set.
"""

import sys

import pytest
import requests
from allennlp.commands import main as allennlp_main
from allennlp.common.checks import ConfigurationError

from allennlp_tune.data.paths import FIXTURE_DATA_DIR, FIXTURE_MODELS_DIR, REPO_ROOT
from allennlp_tune.modules.token_embedders import tune_elmo
from allennlp_tune.modules.token_embedders.tune_elmo import TuneElmoEmbedder

DEFAULT_OPTIONS = (
    "https://allennlp.s3.amazonaws.com/models/elmo/2x4096_512_2048cnn_2xhighway_5.5B/"
    "elmo_2x4096_512_2048cnn_2xhighway_5.5B_options.json"
)


def test_allennlp_train_offline_names_the_url_and_the_variables(tmp_path, monkeypatch):
    fetched = []
    real_cached_path = tune_elmo.cached_path

    def offline_cached_path(url_or_filename, *args, **kwargs):
        # What cached_path raises on a machine without network, after its retries.
        if str(url_or_filename).startswith(("http://", "https://")):
            fetched.append(url_or_filename)
            raise requests.ConnectionError(f"Max retries exceeded with url: {url_or_filename}")
        return real_cached_path(url_or_filename, *args, **kwargs)

    monkeypatch.setattr(tune_elmo, "cached_path", offline_cached_path)
    for name in ("TUNE_ELMO_OPTIONS", "TUNE_ELMO_WEIGHTS"):
        monkeypatch.setenv(name, "")  # unset: the configs' default URLs
    monkeypatch.setenv("TUNE_DATA_DIR", str(FIXTURE_DATA_DIR))
    monkeypatch.setenv("TUNE_MAX_INSTANCES", "4")
    config = str(REPO_ROOT / "training_config" / "sick_e_elmo_ft.jsonnet")
    argv = ["allennlp", "train", config, "-s", str(tmp_path / "out")]
    monkeypatch.setattr(sys, "argv", [*argv, "--include-package", "allennlp_tune"])
    with pytest.raises(ConfigurationError) as error:
        allennlp_main(prog="allennlp")
    message = str(error.value)
    assert fetched == [DEFAULT_OPTIONS]
    assert f"could not read its options_file {DEFAULT_OPTIONS} (ConnectionError:" in message
    assert "TUNE_ELMO_OPTIONS and TUNE_ELMO_WEIGHTS to their local paths" in message


def test_a_missing_local_weight_file_is_named(tmp_path):
    missing = tmp_path / "weights.hdf5"
    with pytest.raises(ConfigurationError) as error:
        TuneElmoEmbedder(str(FIXTURE_MODELS_DIR / "elmo" / "options.json"), str(missing))
    message = str(error.value)
    assert f"could not read its weight_file {missing} (FileNotFoundError:" in message
    assert "(here TUNE_ELMO_WEIGHTS;" in message
