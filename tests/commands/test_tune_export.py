"""
`allennlp tune-export`: each mode's export gives back the archive's encoder (the same hidden
states from `AutoModel.from_pretrained(DIR/encoder)`, or from `PeftModel.from_pretrained` over
the base for LoRA), its head and scalar mix, and a card with the run's score and cost; and it
refuses what it cannot export without writing anything.

The archives are built without training, as `allennlp train` lays them out: the model is built
from its config, every weight the mode trains gets noise (the whole encoder in `sf`, whose
encoder ends fine-tuned), and `archive_model` packs it. So an export that wrote the pretrained
weights instead of the trained ones would fail, and the `fe` export must equal the pretrained
encoder. Two families: the tiny BERT and the tiny DistilBERT (no pooler, no token types, LoRA
targets from allennlp-tune rather than peft).
"""

import copy
import errno
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest
import torch
from allennlp.common import Params
from allennlp.common.checks import ConfigurationError
from allennlp.data import Vocabulary
from allennlp.models import Model
from allennlp.models.archival import Archive, archive_model, load_archive
from safetensors.torch import load_file
from transformers import AutoModel, AutoTokenizer

import allennlp_tune  # noqa: F401  (registers the components)
from allennlp_tune.data.paths import FIXTURE_MODELS_DIR
from allennlp_tune.export import export_archive
from allennlp_tune.export.archive import recipe_name

FAMILIES = {"bert": "bert-uncased", "distilbert": "distilbert"}
MODES = ["fe", "ft", "sf", "bitfit", "lora"]
EMBEDDER_MODES = {
    "fe": "feature_extraction",
    "ft": "fine_tuning",
    "sf": "feature_extraction",
    "bitfit": "bitfit",
    "lora": "lora",
}
EMBEDDER = "_text_field_embedder.token_embedder_tokens"
SENTENCES = ["a charming and funny film", "the plot is thin , silly and far too long"]
LABELS = ["negative", "positive"]


@dataclass
class Exported:
    family: str
    mode: str
    model_name: str
    archive_file: Path
    out: Path
    archive: Archive
    metric: float
    cost: Dict[str, Any]


def _model_config(embedder: Dict[str, Any]) -> Dict[str, Any]:
    return {
        "type": "pooled_classifier",
        "text_field_embedder": {"token_embedders": {"tokens": embedder}},
        "pooling": "max" if embedder["type"] == "tune_elmo" else "cls",
    }


def _write_run(
    run: Path, model_config: Dict[str, Any], reader: Dict[str, Any], mode: str, seed: int
) -> Model:
    """
    A run folder as `allennlp train` and the `tune_cost` callback leave it (config, vocabulary,
    weights, metrics.json, cost.json, model.tar.gz), with noise on what `mode` trains.
    """
    callbacks = [{"type": "stack_then_finetune", "frozen_epochs": 1}] if mode == "sf" else []
    config = {
        "dataset_reader": reader,
        "train_data_path": "unused",
        "model": model_config,
        "trainer": {
            "optimizer": {"type": "adamw"},
            "num_epochs": 1,
            "validation_metric": "+accuracy",
            "callbacks": callbacks,
        },
    }
    vocab = Vocabulary(tokens_to_add={"labels": LABELS})
    model = Model.from_params(vocab=vocab, params=Params(copy.deepcopy(model_config)))
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.requires_grad or mode == "sf":
                parameter.add_(0.05 * torch.randn(parameter.shape, generator=generator))
    run.mkdir(parents=True)
    vocab.save_to_files(str(run / "vocabulary"))
    (run / "config.json").write_text(json.dumps(config))
    torch.save(model.state_dict(), run / "weights.th")
    archive_model(str(run), weights="weights.th")
    return model


@pytest.fixture(scope="module")
def exported(tmp_path_factory, run_allennlp) -> Callable[[str, str], Exported]:
    """`exported(family, mode)`: the run's archive, exported with the CLI and loaded; each once."""
    cache: Dict[tuple, Exported] = {}

    def build(family: str, mode: str) -> Exported:
        if (family, mode) in cache:
            return cache[family, mode]
        if mode == "lora":  # the stock AllenNLP stack's torch 1.12 has no peft (it needs >= 1.13)
            pytest.importorskip("peft", reason="a LoRA run needs peft (the [lora] extra)")
        model_name = str(FIXTURE_MODELS_DIR / FAMILIES[family])
        if not (Path(model_name) / "config.json").is_file():
            pytest.skip(f"fixtures/models/{FAMILIES[family]} is missing")
        root = tmp_path_factory.mktemp(f"{family}_{mode}")
        run = root / f"sst2_{family}_{mode}" / "seed_1"
        transformer = {"type": "pretrained_transformer", "model_name": model_name}
        reader = {
            "type": "sst2",
            "tokenizer": transformer,
            "token_indexers": {"tokens": transformer},
        }
        embedder = {
            "type": "tune_transformer",
            "model_name": model_name,
            "mode": EMBEDDER_MODES[mode],
            "layers": "all",
        }
        seed = len(cache) + 1
        _write_run(run, _model_config(embedder), reader, mode, seed)
        metric = 0.5 + seed / 64  # exact in binary, so the card's 4 decimals are exact too
        cost = {"trainable_params": 1000 + seed, "total_params": 5000, "mean_epoch_seconds": 1.5}
        (run / "metrics.json").write_text(json.dumps({"best_validation_accuracy": metric}))
        (run / "cost.json").write_text(json.dumps(cost))
        out = root / "export"
        run_allennlp("tune-export", str(run / "model.tar.gz"), str(out))
        archive = load_archive(str(run / "model.tar.gz"))
        archive.model.eval()
        result = Exported(
            family, mode, model_name, run / "model.tar.gz", out, archive, metric, cost
        )
        cache[family, mode] = result
        return result

    return build


CASES = [(family, mode) for family in FAMILIES for mode in MODES]


def _hidden_states(model: torch.nn.Module, inputs: Dict[str, torch.Tensor]) -> List[torch.Tensor]:
    with torch.no_grad():
        return list(model(**inputs, output_hidden_states=True).hidden_states)


def _exported_encoder(case: Exported) -> torch.nn.Module:
    if case.mode != "lora":
        return AutoModel.from_pretrained(str(case.out / "encoder")).eval()
    from peft import PeftModel

    adapter_config = json.loads((case.out / "adapter" / "adapter_config.json").read_text())
    assert adapter_config["base_model_name_or_path"] == case.model_name
    base = AutoModel.from_pretrained(adapter_config["base_model_name_or_path"])
    return PeftModel.from_pretrained(base, str(case.out / "adapter")).eval()


@pytest.mark.parametrize("family, mode", CASES)
def test_the_exported_encoder_gives_the_archives_hidden_states(exported, family, mode):
    case = exported(family, mode)
    folder = case.out / ("adapter" if mode == "lora" else "encoder")
    assert not (case.out / ("encoder" if mode == "lora" else "adapter")).exists()
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    inputs = dict(tokenizer(SENTENCES, padding=True, return_tensors="pt"))
    reference = AutoTokenizer.from_pretrained(case.model_name)
    assert torch.equal(
        inputs["input_ids"], reference(SENTENCES, padding=True, return_tensors="pt")["input_ids"]
    )

    archived = case.archive.model.get_submodule(EMBEDDER).transformer_model.eval()
    expected = _hidden_states(archived, inputs)
    found = _hidden_states(_exported_encoder(case), inputs)
    assert len(found) == len(expected) == archived.config.num_hidden_layers + 1
    for layer, (mine, theirs) in enumerate(zip(found, expected)):
        assert torch.allclose(mine, theirs, rtol=0, atol=1e-6), (layer, (mine - theirs).abs().max())

    pretrained = _hidden_states(AutoModel.from_pretrained(case.model_name).eval(), inputs)
    same_as_pretrained = torch.allclose(found[-1], pretrained[-1], rtol=0, atol=1e-4)
    assert same_as_pretrained == (mode == "fe")


@pytest.mark.parametrize("family, mode", CASES)
def test_the_head_and_the_scalar_mix_are_the_archives(exported, family, mode):
    case = exported(family, mode)
    state = case.archive.model.state_dict()
    expected = {name: tensor for name, tensor in state.items() if not name.startswith(EMBEDDER)}
    head = load_file(str(case.out / "head.safetensors"))
    assert sorted(head) == sorted(expected) and head
    for name, tensor in head.items():
        assert torch.equal(tensor, expected[name]), name

    info = json.loads((case.out / "head.json").read_text())
    assert info["model"] == "pooled_classifier" and info["embedder"] == EMBEDDER
    assert info["labels"] == {"labels": LABELS}
    assert info["tensors"]["_head._output_layer.weight"]["shape"] == [
        2,
        head["_head._output_layer.weight"].shape[1],
    ]

    mix = json.loads((case.out / "scalar_mix.json").read_text())
    embedder = case.archive.model.get_submodule(EMBEDDER)
    raw = torch.cat(list(embedder._scalar_mix.scalar_parameters))
    assert mix["layers"] == list(range(embedder.config.num_hidden_layers + 1))
    assert torch.equal(torch.tensor(mix["scalar_parameters"]), raw)
    assert torch.allclose(torch.tensor(mix["weights"]), torch.softmax(raw, 0), atol=1e-7)
    assert mix["gamma"] == embedder._scalar_mix.gamma.item() != 1.0  # trained in every mode


@pytest.mark.parametrize("family, mode", [("bert", "fe"), ("bert", "sf"), ("distilbert", "lora")])
def test_the_card_has_the_task_mode_encoder_score_and_cost(exported, family, mode):
    case = exported(family, mode)
    card = (case.out / "README.md").read_text()
    assert "| Task | `sst2` |" in card
    assert f"| Mode | `{mode}`," in card
    assert f"`{case.model_name}` (`{family}`)" in card
    assert f"accuracy = {case.metric:.4f}" in card and "metrics.json" in card
    assert f"{case.cost['trainable_params']:,} of 5,000 parameters trained" in card
    assert ("unchanged" in card) == (mode == "fe")
    if mode == "lora":
        assert "PeftModel.from_pretrained" in card


def test_the_mode_names_follow_the_grid():
    stacked = {"callbacks": [{"type": "stack_then_finetune"}]}
    assert recipe_name("feature_extraction", {}) == "fe"
    assert recipe_name("feature_extraction", stacked) == "sf"
    assert recipe_name("lora", stacked) == "sf (lora)"
    assert recipe_name("fine_tuning", stacked) == "ft"
    assert recipe_name("bitfit", None) == "bitfit"
    assert recipe_name("feature_extraction", {"callbacks": [{"type": "gradual_unfreezing"}]}) == (
        "gradual unfreezing"
    )


def _no_leftovers(folder: Path) -> None:
    assert not [path.name for path in folder.iterdir() if ".tune-export-" in path.name]


def test_a_non_empty_dir_is_refused_and_left_alone(exported, tmp_path):
    case = exported("bert", "ft")
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("my notes")
    with pytest.raises(ConfigurationError, match="not empty") as error:
        export_archive(case.archive_file, out)
    assert str(out) in str(error.value) and "\n" not in str(error.value)
    assert [path.name for path in out.iterdir()] == ["notes.txt"]
    assert (out / "notes.txt").read_text() == "my notes"
    _no_leftovers(tmp_path)


def test_an_empty_dir_is_used(exported, tmp_path):
    case = exported("bert", "bitfit")
    out = tmp_path / "empty"
    out.mkdir()
    export_archive(case.archive_file, out)
    assert sorted(path.name for path in out.iterdir()) == sorted(
        path.name for path in case.out.iterdir()
    )


def test_the_cli_refuses_a_file_that_is_not_an_archive(run_allennlp, tmp_path, capsys):
    notes = tmp_path / "model.tar.gz"
    notes.write_text("not an archive")
    with pytest.raises(SystemExit) as exit_info:
        run_allennlp("tune-export", str(notes), str(tmp_path / "out"))
    assert exit_info.value.code == 2
    message = capsys.readouterr().err.strip()
    assert message.startswith("allennlp tune-export:") and str(notes) in message
    assert "\n" not in message
    assert not (tmp_path / "out").exists()
    _no_leftovers(tmp_path)


def _refuse_mkdir(monkeypatch, refused, code=errno.EROFS):
    """`os.mkdir` fails with `code` where `refused(path)`, as on a read-only filesystem (the
    tests run as root, whom permissions do not stop)."""
    real_mkdir = os.mkdir

    def mkdir(path, *args, **kwargs):
        if refused(Path(os.fsdecode(path))):
            raise OSError(code, os.strerror(code), os.fsdecode(path))
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)
    # Python 3.10's `Path.mkdir` calls the `os.mkdir` its accessor bound at import, not this one.
    real_path_mkdir = Path.mkdir

    def path_mkdir(self, *args, **kwargs):
        if refused(Path(self)):
            raise OSError(code, os.strerror(code), str(self))
        return real_path_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", path_mkdir)


def _cli_error(run_allennlp, capsys, *args: str) -> str:
    with pytest.raises(SystemExit) as exit_info:
        run_allennlp("tune-export", *args)
    assert exit_info.value.code == 2
    message = capsys.readouterr().err
    assert message.startswith("allennlp tune-export: DIR ") and message.count("\n") == 1
    return message.strip()


def test_a_dir_under_a_file_is_refused_before_the_archive_is_read(
    exported, run_allennlp, tmp_path, capsys
):
    case = exported("bert", "ft")
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    message = _cli_error(run_allennlp, capsys, str(case.archive_file), str(notes / "out"))
    assert message.endswith(
        f"DIR {notes / 'out'} lies under {notes}, which is a file, not a folder; give the path "
        "of a folder (it is created if missing)."
    )
    assert notes.read_text() == "my notes"
    _no_leftovers(tmp_path)


def test_a_dir_that_cannot_be_written_is_named(
    exported, run_allennlp, tmp_path, capsys, monkeypatch
):
    case = exported("bert", "ft")
    # A real virtual filesystem: /proc takes no new folders, even from root.
    message = _cli_error(run_allennlp, capsys, str(case.archive_file), "/proc/tune-export")
    assert "DIR /proc/tune-export cannot be created: /proc takes no new files" in message
    # A read-only filesystem, as the checks see it.
    read_only = tmp_path / "read_only"
    read_only.mkdir()
    with monkeypatch.context() as patch:
        _refuse_mkdir(patch, lambda path: path.parent == read_only)
        message = _cli_error(run_allennlp, capsys, str(case.archive_file), str(read_only / "out"))
    assert f"cannot be created: {read_only} is on a read-only filesystem; give a folder" in message
    # Past the checks, the export's own folder refused (the filesystem turned read-only).
    with monkeypatch.context() as patch:
        _refuse_mkdir(patch, lambda path: ".tune-export-" in path.name, errno.EACCES)
        message = _cli_error(run_allennlp, capsys, str(case.archive_file), str(tmp_path / "out"))
    assert f"DIR {tmp_path / 'out'} cannot be created: this user may not create files" in message
    assert not (tmp_path / "out").exists()
    _no_leftovers(tmp_path)


def test_a_missing_archive_is_refused(tmp_path):
    with pytest.raises(ConfigurationError, match="does not exist"):
        export_archive(tmp_path / "nowhere" / "model.tar.gz", tmp_path / "out")


def test_an_archive_of_another_model_is_refused(tmp_path):
    run = tmp_path / "words"
    config = {
        "type": "basic_classifier",
        "text_field_embedder": {
            "token_embedders": {"tokens": {"type": "embedding", "embedding_dim": 4}}
        },
        "seq2vec_encoder": {"type": "boe", "embedding_dim": 4},
    }
    reader = {"type": "text_classification_json", "tokenizer": {"type": "whitespace"}}
    _write_run(run, config, reader, "ft", seed=0)
    with pytest.raises(ConfigurationError, match="not one of allennlp-tune's models") as error:
        export_archive(run / "model.tar.gz", tmp_path / "out")
    assert str(run / "model.tar.gz") in str(error.value) and "Embedding" in str(error.value)
    assert not (tmp_path / "out").exists()
    _no_leftovers(tmp_path)


def test_an_elmo_run_is_refused_the_encoder_export_and_exports_its_head(tmp_path):
    elmo = FIXTURE_MODELS_DIR / "elmo"
    if not (elmo / "options.json").is_file():
        pytest.skip("fixtures/models/elmo is missing")
    embedder = {
        "type": "tune_elmo",
        "options_file": str(elmo / "options.json"),
        "weight_file": str(elmo / "weights.hdf5"),
        "mode": "fine_tuning",
        "layers": "all",
    }
    reader = {
        "type": "sst2",
        "tokenizer": {"type": "whitespace"},
        "token_indexers": {"tokens": {"type": "elmo_characters"}},
    }
    run = tmp_path / "sst2_elmo_ft"
    model = _write_run(run, _model_config(embedder), reader, "ft", seed=0)
    with pytest.raises(ConfigurationError, match="--head-only") as error:
        export_archive(run / "model.tar.gz", tmp_path / "out")
    assert str(run / "model.tar.gz") in str(error.value) and "ELMo" in str(error.value)
    assert not (tmp_path / "out").exists()

    export_archive(run / "model.tar.gz", tmp_path / "out", head_only=True)
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == [
        "README.md",
        "head.json",
        "head.safetensors",
        "scalar_mix.json",
    ]
    head = load_file(str(tmp_path / "out" / "head.safetensors"))
    state = model.state_dict()
    assert head and all(torch.equal(tensor, state[name]) for name, tensor in head.items())
    mix = json.loads((tmp_path / "out" / "scalar_mix.json").read_text())
    assert mix["layers"] == [0, 1, 2] and "character CNN" in mix["layer_meaning"]
    assert "--head-only" in (tmp_path / "out" / "README.md").read_text()
    _no_leftovers(tmp_path)


def test_allennlp_help_lists_tune_export(run_allennlp, capsys):
    with pytest.raises(SystemExit) as exit_info:
        run_allennlp("--help")
    assert exit_info.value.code == 0
    assert "    tune-export " in capsys.readouterr().out
