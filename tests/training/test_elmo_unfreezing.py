"""An ELMo fine-tuning cell trained long enough for gradual unfreezing to reach the LSTM layers
(the config tests train one epoch, in which only the head and the scalar mix train)."""

import importlib
import json
from pathlib import Path

import torch
from allennlp.commands.train import train_model
from allennlp.common import Params
from allennlp.modules.token_embedders import TokenEmbedder

import allennlp_tune  # noqa: F401
from allennlp_tune.data.paths import FIXTURE_DATA_DIR, FIXTURE_MODELS_DIR, REPO_ROOT

ELMO = FIXTURE_MODELS_DIR / "elmo"


def test_gradual_unfreezing_reaches_the_lstm_layers_of_the_elmo_ft_cell(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    importlib.import_module("fidelity_callbacks")  # record_encoder_modes
    for name, value in {
        "TUNE_DATA_DIR": str(FIXTURE_DATA_DIR),
        "TUNE_ELMO_OPTIONS": str(ELMO / "options.json"),
        "TUNE_ELMO_WEIGHTS": str(ELMO / "weights.hdf5"),
        "TUNE_EPOCHS": "3",  # epoch 0: head; 1: + lstm_1; 2: + lstm_0; char_cnn would be next
        "TUNE_BATCH_SIZE": "4",
    }.items():
        monkeypatch.setenv(name, value)
    config = REPO_ROOT / "training_config" / "sst2_elmo_ft.jsonnet"
    callbacks = Params.from_file(str(config)).as_dict()["trainer"]["callbacks"]
    # The cell's own callbacks (every trainer also records its cost, last).
    assert callbacks == [{"type": "gradual_unfreezing"}, {"type": "tune_cost"}]
    callbacks.append({"type": "record_encoder_modes"})
    params = Params.from_file(str(config), json.dumps({"trainer.callbacks": callbacks}))
    train_model(params, str(tmp_path / "run"))

    records = [json.loads(line) for line in (tmp_path / "run" / "encoder_modes_0.jsonl").open()]
    graded = {}
    for record in records:
        graded.setdefault(record["epoch"], set()).update(record["graded"])
    assert graded == {0: set(), 1: {"lstm_1"}, 2: {"lstm_0", "lstm_1"}}
    for record in records:  # frozen groups in eval mode (no dropout), trained ones not
        trains = {0: [], 1: ["lstm_1"], 2: ["lstm_0", "lstm_1"]}[record["epoch"]]
        for group, flags in record["training"].items():
            assert flags == [group in trains], record

    pretrained = TokenEmbedder.from_params(
        Params(
            {
                "type": "tune_elmo",
                "options_file": str(ELMO / "options.json"),
                "weight_file": str(ELMO / "weights.hdf5"),
            }
        )
    )
    # The weights after the last epoch (train_model returns the best epoch's).
    (last,) = (tmp_path / "run").glob("model_state_e3_*.th")
    state = torch.load(last, map_location="cpu")
    (path,) = {name.split("._scalar_mix.")[0] for name in state if "._scalar_mix." in name}
    trained = {n[len(path) + 1 :]: value for n, value in state.items() if n.startswith(path + ".")}
    for group, params_ in pretrained.layer_groups():
        changed = [not torch.equal(p, trained[name]) for name, p in params_]
        if group.startswith("lstm_"):  # every LSTM weight moved away from the pretrained one
            assert all(changed), group
        else:  # the char-CNN, never unfrozen in 3 epochs, is exactly the pretrained one
            assert group == "char_cnn" and not any(changed), group
