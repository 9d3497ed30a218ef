"""
`cell(task, encoder, "topK" | "bottomK")`: a block of K layer groups fine-tuned with the
fine-tuning head and recipe, the rest frozen through the embedder's `tuned_groups`; no schedule
unfreezes the others. Rendered as AllenNLP reads a config, then trained on the fixture data.
"""

from pathlib import Path

import pytest
from allennlp.common.checks import ConfigurationError
from allennlp.models.archival import load_archive

import allennlp_tune  # noqa: F401  (registers the components)
from tests.configs.test_rendered_configs import render
from tests.configs.test_training_configs import fixture_ext_vars, run_allennlp

LIBRARY = Path(__file__).resolve().parents[2] / "allennlp_tune" / "configs" / "experiment.libsonnet"


def cell_file(tmp_path: Path, task: str, encoder: str, mode: str) -> Path:
    path = tmp_path / f"{task}_{encoder}_{mode}.jsonnet"
    path.write_text(
        f'local experiment = import "{LIBRARY}";\n'
        f'experiment.cell("{task}", "{encoder}", "{mode}")\n'
    )
    return path


def embedder_of(config: dict) -> dict:
    return next(iter(config["model"]["text_field_embedder"]["token_embedders"].values()))


@pytest.mark.parametrize(
    "task, encoder, mode, groups",
    [
        ("sick_e", "bert", "top2", "top:2"),
        ("sst2", "bert", "bottom1", "bottom:1"),
        ("sst2", "elmo", "top1", "top:1"),
        ("sick_e", "elmo", "bottom2", "bottom:2"),
    ],
)
def test_a_block_mode_is_fine_tuning_of_its_groups_with_the_ft_recipe(
    task, encoder, mode, groups, tmp_path
):
    block = render(cell_file(tmp_path, task, encoder, mode))
    ft = render(cell_file(tmp_path, task, encoder, "ft"))
    embedder = embedder_of(block)
    assert embedder["mode"] == "fine_tuning" and embedder["tuned_groups"] == groups
    assert "tuned_groups" not in embedder_of(ft)
    # Everything else is fine-tuning's, but the schedules that would unfreeze other groups.
    callbacks = [c["type"] for c in block["trainer"].get("callbacks", [])]
    assert "gradual_unfreezing" not in callbacks
    assert block["model"]["type"] == ft["model"]["type"]
    assert block["trainer"]["optimizer"] == ft["trainer"]["optimizer"]
    del embedder["tuned_groups"]
    # A BERT top block caches the output of its frozen layers (prefix_cache), as fe does.
    cached = encoder == "bert" and groups.startswith("top:")
    assert (embedder.pop("feature_cache", None) is not None) == cached
    assert embedder == embedder_of(ft)


@pytest.mark.parametrize("mode", ["top", "topx", "top-1", "middle2", "bottom:2"])
def test_a_mode_that_is_not_a_block_is_refused_with_the_modes(mode, tmp_path):
    with pytest.raises(Exception, match="mode must be fe, ft, sf, bitfit, lora, topK or bottomK"):
        render(cell_file(tmp_path, "sick_e", "bert", mode))


def test_a_block_cell_trains_and_its_archive_keeps_the_block(tmp_path, monkeypatch):
    config = cell_file(tmp_path, "sick_e", "bert", "top1")
    for name, value in fixture_ext_vars(Path("sick_e_bert_ft.jsonnet"), tmp_path).items():
        monkeypatch.setenv(name, value)
    out = tmp_path / "run"
    run_allennlp(
        monkeypatch, "train", str(config), "-s", str(out), "--include-package", "allennlp_tune"
    )
    archive = load_archive(str(out / "model.tar.gz"))
    embedder = archive.model._text_field_embedder._token_embedders["tokens"]
    assert embedder.trainable_groups() == [len(embedder.layer_groups()) - 1]


def test_a_block_larger_than_the_encoder_names_its_groups(tmp_path, monkeypatch):
    config = cell_file(tmp_path, "sick_e", "bert", "top9")
    for name, value in fixture_ext_vars(Path("sick_e_bert_ft.jsonnet"), tmp_path).items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigurationError, match=r"tuned_groups is 'top:9': K out of range"):
        run_allennlp(monkeypatch, "train", str(config), "-s", str(tmp_path / "run"))


@pytest.mark.parametrize("mode", ["top99", "bottom6"])
def test_plan_only_refuses_a_block_larger_than_the_encoder(tmp_path, monkeypatch, capsys, mode):
    """`tune-compare --modes top99 --plan-only` on the 4-layer fixture BERT (5 groups): refused
    in a line, as the run's embedder would refuse it (on abacd86 it planned, exit 0, and every
    run then failed); a block of every group plans."""
    from allennlp_tune.data.paths import FIXTURE_DATA_DIR, FIXTURE_MODELS_DIR
    from tests.results.test_compare import allennlp

    bert = FIXTURE_MODELS_DIR / "bert-uncased"
    argv = ["tune-compare", "sst2", "--encoder", str(bert), "--modes", mode, "--plan-only"]
    argv += ["--results-dir", str(tmp_path / "out"), "--no-calibrate", "--no-progress"]
    assert allennlp(monkeypatch, *argv, "--ext-var", f"TUNE_DATA_DIR={FIXTURE_DATA_DIR}") == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == (
        f"allennlp tune-compare: --modes {mode}: {bert} has 5 layer groups (embeddings and 4 "
        f"layers), fewer than the block's {mode.strip('topbm')}; give K from 1 to 5 (top5 or "
        "bottom5 fine-tunes every group, as ft does)."
    )
    assert not (tmp_path / "out").exists()
    from allennlp_tune.experiments.encoder_check import check_block_modes

    check_block_modes(["top5", "bottom5"], "bert", str(bert))
    elmo = FIXTURE_MODELS_DIR / "elmo" / "options.json"  # 2 LSTM layers: 3 groups
    check_block_modes(["top3"], "elmo", str(elmo))
    with pytest.raises(ConfigurationError, match="has 3 layer groups .char_cnn and 2 layers"):
        check_block_modes(["bottom4"], "elmo", str(elmo))
