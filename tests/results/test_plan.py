"""The planner: estimates before a grid runs, and over-budget caches refused first."""

import dataclasses
import json
import shutil
from collections import namedtuple
from pathlib import Path

import pytest
from allennlp.common.checks import ConfigurationError
from transformers import AutoTokenizer

from allennlp_tune.data.paths import FIXTURE_DATA_DIR, FIXTURE_MODELS_DIR, REPO_ROOT
from allennlp_tune.experiments.grid import run_grid
from allennlp_tune.modules.feature_cache import (
    ENTRY_HEADER_BYTES,
    ENTRY_OVERHEAD_BYTES,
    estimated_cache_bytes,
)
from allennlp_tune.planning import fit, render
from allennlp_tune.planning.cost_model import BASE_RSS_MB, COST_MODEL, ModeCost
from allennlp_tune.planning.encoder_size import transformer_size
from allennlp_tune.planning.fit import fit_cost_model
from allennlp_tune.planning.plan import plan_cell, planned_run_seconds, render_config

SST2_FE = REPO_ROOT / "training_config" / "sst2_bert_fe.jsonnet"
CONLL_FE = REPO_ROOT / "training_config" / "conll2003_bert_fe.jsonnet"
SST2_FT = REPO_ROOT / "training_config" / "sst2_bert_ft.jsonnet"
BERT = FIXTURE_MODELS_DIR / "bert-uncased"
CACHE_OVERRIDE = "model.text_field_embedder.token_embedders.tokens.feature_cache"


def ext_vars(model=BERT, **more):
    return {
        "TUNE_DATA_DIR": str(FIXTURE_DATA_DIR),
        "TUNE_BERT_MODEL": str(model),
        "TUNE_FEATURE_CACHE": "true",
        "TUNE_EPOCHS": "1",
        **more,
    }


def never_train(command, environment, log_path):
    raise AssertionError(f"the grid trained {command}")


def sst2_sentences(split: str = "train"):
    lines = (FIXTURE_DATA_DIR / "sst-2" / f"{split}.tsv").read_text().splitlines()[1:]
    return [line.split("\t")[0] for line in lines if line.strip()]


def test_the_estimate_is_the_formula_over_the_fixture_data(tmp_path):
    tokenizer = AutoTokenizer.from_pretrained(str(BERT))
    sentences = sst2_sentences()
    wordpieces = sum(len(tokenizer(sentence)["input_ids"]) for sentence in sentences)
    cell = plan_cell(SST2_FE, ext_vars(), cache_directory=tmp_path / "cache")
    assert cell.mode == "fe" and cell.budget_error is None and not cell.notes
    assert (cell.data.instances, cell.data.sequences) == (len(sentences), len(sentences))
    assert cell.data.wordpieces == wordpieces
    # The fixture BERT: 4 hidden layers of width 16; layers "all" mixes the embeddings too.
    assert (cell.encoder.num_layers, cell.encoder.hidden_size, cell.cache_layers) == (4, 16, 5)
    # The cache also holds the validation data's features (the trainer validates through it).
    dev = sst2_sentences("dev")
    dev_wordpieces = sum(len(tokenizer(sentence)["input_ids"]) for sentence in dev)
    assert (cell.validation.sequences, cell.validation.wordpieces) == (len(dev), dev_wordpieces)
    entries = len(sentences) + len(dev)
    expected = 2 * (wordpieces + dev_wordpieces) * 5 * 16 + entries * ENTRY_OVERHEAD_BYTES
    assert cell.cache_bytes == expected
    assert cell.cache_directory == tmp_path / "cache"
    # The cost model: time from the wordpieces and L x H^2 (the BCN's entry has one width's
    # term only), RAM from the parameters and the instances.
    # The BCN head has an entry of its own, which is preferred to the pooled "fe" one.
    assert cell.cost_key == "fe/tune_bcn"
    fe = COST_MODEL[cell.cost_key]
    assert cell.epoch_seconds == pytest.approx(fe.a + fe.b * wordpieces * 4 * 16**2)
    if fe.first_b is not None:  # a cached cell's first epoch runs the encoder
        first = fe.first_a + fe.first_b * wordpieces * 4 * 16**2
        assert cell.first_epoch_seconds == pytest.approx(first)
    per_instance = (fe.g or 0.0) * len(sentences)
    assert cell.peak_rss_mb == pytest.approx(fe.c + fe.d * cell.encoder.params + per_instance)
    # max_instances is the reader's: honoured.
    few = plan_cell(SST2_FE, ext_vars(TUNE_MAX_INSTANCES="3"), cache_directory=tmp_path)
    head = sum(len(tokenizer(sentence)["input_ids"]) for sentence in sentences[:3])
    assert (few.data.instances, few.data.wordpieces) == (3, head)


def test_a_tagger_counts_wordpieces_not_words(tmp_path):
    rendered = render_config(CONLL_FE, ext_vars())
    model = rendered["dataset_reader"]["token_indexers"]["tokens"]["model_name"]
    tokenizer = AutoTokenizer.from_pretrained(model)
    sentences, words = [], []
    for line in (FIXTURE_DATA_DIR / "conll2003" / "eng.train").read_text().splitlines():
        if not line.strip() or line.startswith("-DOCSTART-"):
            if words:
                sentences.append(words)
            words = []
        else:
            words.append(line.split()[0])
    if words:
        sentences.append(words)
    wordpieces = sum(
        len(tokenizer(sentence, is_split_into_words=True)["input_ids"]) for sentence in sentences
    )
    cell = plan_cell(CONLL_FE, ext_vars(), cache_directory=tmp_path)
    assert cell.data.instances == len(sentences)
    assert cell.data.wordpieces == wordpieces > sum(map(len, sentences))
    validation = cell.validation  # eng.testa, counted the same way
    assert validation.instances > 0 and validation.wordpieces > validation.instances
    entries = len(sentences) + validation.sequences
    payload = 2 * (wordpieces + validation.wordpieces) * cell.cache_layers * 16
    assert cell.cache_bytes == payload + entries * ENTRY_OVERHEAD_BYTES


def test_the_encoder_size_comes_from_config_json_alone(tmp_path):
    folder = tmp_path / "no_weights"
    folder.mkdir()
    for path in BERT.iterdir():
        if not path.name.endswith((".safetensors", ".bin")):
            shutil.copy(path, folder)
    size = transformer_size(str(folder))
    assert (size.num_layers, size.hidden_size) == (4, 16)
    cell = plan_cell(SST2_FE, ext_vars(model=folder), cache_directory=tmp_path / "cache")
    assert cell.cache_bytes == plan_cell(SST2_FE, ext_vars(), cache_directory=tmp_path).cache_bytes
    # The parameter estimate is exact for BERT: the fixture model's own count (no pooler).
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(BERT), add_pooling_layer=False)
    assert size.params == sum(p.numel() for p in model.parameters())


def test_an_over_budget_cell_fails_before_training_and_writes_nothing(tmp_path, capsys):
    results = tmp_path / "results"
    overrides = json.dumps({f"{CACHE_OVERRIDE}.disk_mb": 0.001})
    with pytest.raises(ConfigurationError) as refused:
        run_grid(
            [SST2_FE],
            [1],
            results,
            ext_vars=ext_vars(),
            overrides=overrides,
            runner=never_train,
            progress=False,
        )
    message = str(refused.value)
    assert "nothing was trained" in message and "sst2_bert_fe" in message
    assert "feature_cache.disk_mb" in message and "TUNE_FEATURE_CACHE=false" in message
    assert not results.exists()
    assert "OVER BUDGET" in capsys.readouterr().err
    # --no-plan trains anyway (here: the runner is called).
    with pytest.raises(AssertionError, match="the grid trained"):
        run_grid(
            [SST2_FE],
            [1],
            results,
            ext_vars=ext_vars(),
            overrides=overrides,
            runner=never_train,
            progress=False,
            plan=False,
        )


def test_too_little_free_disk_names_the_directory_setting(tmp_path, monkeypatch):
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(100 * 2**30, 99 * 2**30, 2**30))
    results = tmp_path / "results"
    with pytest.raises(ConfigurationError) as refused:
        run_grid([SST2_FE], [1], results, ext_vars=ext_vars(), runner=never_train, progress=False)
    message = str(refused.value)
    assert "TUNE_FEATURE_CACHE_DIR" in message and "min_free_mb" in message
    assert str((results / ".feature_cache").resolve()) in message
    assert not results.exists()
    # min_free_mb 0 lets it fit: the grid goes on to train.
    overrides = json.dumps({f"{CACHE_OVERRIDE}.min_free_mb": 0})
    with pytest.raises(AssertionError, match="the grid trained"):
        run_grid(
            [SST2_FE],
            [1],
            results,
            ext_vars=ext_vars(),
            overrides=overrides,
            runner=never_train,
            progress=False,
        )


def test_plan_only_prints_the_plan_and_trains_nothing(tmp_path, capsys):
    results = tmp_path / "results"
    result = run_grid(
        [SST2_FE, SST2_FT],
        [1, 2],
        results,
        ext_vars=ext_vars(),
        runner=never_train,
        progress=False,
        plan_only=True,
    )
    assert not (result.trained or result.skipped or result.failed)
    assert not results.exists()
    out = capsys.readouterr().out
    assert "| sst2_bert_fe | 12 |" in out and "| sst2_bert_ft | 12 |" in out
    assert "cache = 2 B x" in out and " x 5 layers x 16 + " in out
    # A mode without measurements prints n/a, not a guess.
    cell = plan_cell(SST2_FT, ext_vars(), cost_model={"fe": COST_MODEL["fe"]})
    assert cell.epoch_seconds is None and cell.peak_rss_mb is None and cell.cache_bytes is None


def test_a_cell_that_cannot_be_planned_is_not_refused(tmp_path, capsys):
    config = tmp_path / "sick_e_bow_fe.jsonnet"
    config.write_text("{}")
    cell = plan_cell(config, {})
    assert cell.data is None and cell.encoder is None and cell.budget_error is None
    assert "no transformer or ELMo embedder found" in cell.notes
    missing = plan_cell(SST2_FE, ext_vars(TUNE_DATA_DIR=str(tmp_path / "none")))
    assert any("does not exist" in note for note in missing.notes)
    assert missing.cache_bytes is None and missing.budget_error is None


def write_encoder(folder: Path, layers: int, hidden: int) -> Path:
    """A BERT folder with a config.json and the fixture's tokenizer files, no weights."""
    folder.mkdir(parents=True)
    config = json.loads((BERT / "config.json").read_text())
    config.update(num_hidden_layers=layers, hidden_size=hidden, intermediate_size=2 * hidden)
    (folder / "config.json").write_text(json.dumps(config))
    for path in BERT.iterdir():
        if path.name not in ("config.json", "model.safetensors", "pytorch_model.bin"):
            shutil.copy(path, folder)
    return folder


def test_the_fit_recovers_known_coefficients(tmp_path):
    # Encoders of three widths: time through the origin in both terms (a = 0).
    a, b, c, d, g, e = 3.0, 2e-4, 500.0, 4e-3, 0.5, 5e-3
    runs = []
    for index, (layers, hidden, max_instances) in enumerate(
        [(2, 16, 4), (4, 16, 12), (3, 32, 8), (2, 64, 12)]
    ):
        encoder = write_encoder(tmp_path / f"encoder_{index}", layers, hidden)
        size = transformer_size(str(encoder))
        variables = ext_vars(model=encoder, TUNE_MAX_INSTANCES=str(max_instances))
        config = render_config(SST2_FT, variables)
        cell = plan_cell(SST2_FT, variables)
        work = cell.data.wordpieces * layers * hidden**2
        linear = cell.data.wordpieces * layers * hidden
        run_dir = tmp_path / "runs" / f"grid_{index}" / "sst2_bert_ft" / "seed_1"
        run_dir.mkdir(parents=True)
        (run_dir / "config.json").write_text(json.dumps(config))
        rss = c + d * size.params + g * cell.data.instances
        seconds = b * work + e * linear
        cost = {"mean_epoch_seconds": seconds, "peak_rss_mb": rss, "peak_gpu_mb": None}
        (run_dir / "cost.json").write_text(json.dumps(cost))
        runs.append(run_dir)
    # A run without any measurement and a folder that is no run are skipped.
    empty = tmp_path / "runs" / "empty" / "sst2_bert_ft" / "seed_1"
    empty.mkdir(parents=True)
    (empty / "config.json").write_text(json.dumps(render_config(SST2_FT, ext_vars())))
    model = fit_cost_model(runs + [empty, tmp_path / "runs" / "nothing"])
    assert set(model) == {"ft"}
    fitted = model["ft"]
    assert fitted.runs == 4
    assert (fitted.a, fitted.b, fitted.e) == (0.0, pytest.approx(b), pytest.approx(e))
    assert (fitted.c, fitted.d, fitted.g) == (pytest.approx(c), pytest.approx(d), pytest.approx(g))
    # One encoder and one data size: only the slope can be told; a = 0, c = BASE_RSS_MB, and
    # no per-instance term.
    single = fit_cost_model(runs[:1])["ft"]
    assert (single.a, single.c, single.g) == (0.0, BASE_RSS_MB, None)
    point = fit.cost_point(runs[0])
    assert single.e is None
    assert single.b == pytest.approx((b * point.work + e * point.linear_work) / point.work)
    rss = c + d * point.params + g * point.instances
    assert single.d == pytest.approx((rss - BASE_RSS_MB) / point.params)
    # What it fits feeds the planner: RAM grows with the train split's instances.
    cost = ModeCost(a, b, c, d, g=g)
    cell = plan_cell(SST2_FT, ext_vars(), cost_model={"ft": cost})
    assert cell.epoch_seconds == pytest.approx(a + b * cell.data.wordpieces * 4 * 16**2)
    params = cell.encoder.params
    assert cell.peak_rss_mb == pytest.approx(c + d * params + g * cell.data.instances)
    few = plan_cell(SST2_FT, ext_vars(TUNE_MAX_INSTANCES="3"), cost_model={"ft": cost})
    assert few.peak_rss_mb == pytest.approx(c + d * params + g * 3)
    assert "g=0.5" in fit.format_cost_model({"ft": fitted})
    assert "g=" not in fit.format_cost_model({"ft": single})


def test_two_widths_tell_the_square_term_from_the_linear_one(tmp_path):
    # The refit's case: one task, a narrow and a wide encoder, whose time per wordpiece grows
    # less than H^2 does (MPNet against MiniLM: 4-5x, not 8x). Fitted on the two, the model
    # prices a third width it never saw; W x L x H^2 alone, fitted on the same two, does not.
    b, e = 2e-4, 3e-2
    shapes = [(2, 16), (4, 32), (3, 64)]
    runs = []
    for index, (layers, hidden) in enumerate(shapes):
        encoder = write_encoder(tmp_path / f"encoder_{index}", layers, hidden)
        variables = ext_vars(model=encoder)
        wordpieces = plan_cell(SST2_FT, variables).data.wordpieces
        seconds = wordpieces * layers * (b * hidden**2 + e * hidden)
        run_dir = tmp_path / "runs" / f"grid_{index}" / "sst2_bert_ft" / "seed_1"
        run_dir.mkdir(parents=True)
        (run_dir / "config.json").write_text(json.dumps(render_config(SST2_FT, variables)))
        (run_dir / "cost.json").write_text(json.dumps({"mean_epoch_seconds": seconds}))
        runs.append((run_dir, variables, seconds))
    fitted = fit_cost_model([run for run, _, _ in runs[:2]])["ft"]
    assert (fitted.a, fitted.b, fitted.e) == (0.0, pytest.approx(b), pytest.approx(e))
    assert "e=0.03" in fit.format_cost_model({"ft": fitted})
    _, held_out, seconds = runs[2]
    cell = plan_cell(SST2_FT, held_out, cost_model={"ft": fitted})
    assert cell.epoch_seconds == pytest.approx(seconds)
    # The square term alone through the same two runs: 10% or more off the third.
    works = [fit.cost_point(run).work for run, _, _ in runs]
    a1, b1 = fit._line(works[:2], [runs[0][2], runs[1][2]], 0.0)
    assert abs((a1 + b1 * works[2]) / seconds - 1) > 0.1
    # One width (two depths): the terms cannot be told apart, one term is fitted, e is None.
    same_width = []
    for index, layers in enumerate((2, 6)):
        encoder = write_encoder(tmp_path / f"deep_{index}", layers, 32)
        variables = ext_vars(model=encoder)
        wordpieces = plan_cell(SST2_FT, variables).data.wordpieces
        run_dir = tmp_path / "runs" / f"deep_{index}" / "sst2_bert_ft" / "seed_1"
        run_dir.mkdir(parents=True)
        (run_dir / "config.json").write_text(json.dumps(render_config(SST2_FT, variables)))
        cost = {"mean_epoch_seconds": wordpieces * layers * (b * 32**2 + e * 32)}
        (run_dir / "cost.json").write_text(json.dumps(cost))
        same_width.append(run_dir)
    one_term = fit_cost_model(same_width)["ft"]
    assert one_term.e is None and one_term.b == pytest.approx(b + e / 32)
    # Times that shrink with the width have no non-negative two-term fit but the linear term.
    wide, narrow = runs[2][0], runs[0][0]
    (wide / "cost.json").write_text(json.dumps({"mean_epoch_seconds": 1.0}))
    (narrow / "cost.json").write_text(json.dumps({"mean_epoch_seconds": 50.0}))
    shrinking = fit_cost_model([narrow, wide])["ft"]
    assert shrinking.b == 0.0 and shrinking.e > 0


def test_the_longest_batch_sets_the_memory_term(tmp_path):
    # MRPC's case: pairs twice SICK-E's length peaked 16-34% above a plan that knew only P and N.
    # The count keeps the most wordpieces of one instance (a separately encoded pair: both
    # sides), the planner prices B x T x L x H, and the fit tells s from runs whose longest
    # batches differ (here by batch size and width), with g as given.
    tokenizer = AutoTokenizer.from_pretrained(str(BERT))
    cell = plan_cell(SST2_FT, ext_vars())
    lengths = [len(tokenizer(sentence)["input_ids"]) for sentence in sst2_sentences()]
    assert cell.data.longest == max(lengths) and cell.data.wordpieces == sum(lengths)
    separate = REPO_ROOT / "training_config" / "sick_e_bert_fe_separate.jsonnet"
    pairs = plan_cell(separate, ext_vars())
    assert pairs.data.sequences == 2 * pairs.data.instances
    assert max(lengths) < pairs.data.longest < pairs.data.wordpieces / pairs.data.instances * 4

    c, d, g, s_ = 700.0, 2e-3, 0.5, 3e-4
    runs = []
    for index, (layers, hidden, batch_size) in enumerate([(2, 16, 4), (4, 32, 8), (2, 64, 2)]):
        encoder = write_encoder(tmp_path / f"encoder_{index}", layers, hidden)
        loader = json.dumps({"data_loader.batch_sampler.batch_size": batch_size})
        config = render_config(SST2_FT, ext_vars(model=encoder), overrides=loader)
        run_dir = tmp_path / "runs" / f"grid_{index}" / "sst2_bert_ft" / "seed_1"
        run_dir.mkdir(parents=True)
        (run_dir / "config.json").write_text(json.dumps(config))
        params = transformer_size(str(encoder)).params
        activations = batch_size * cell.data.longest * layers * hidden
        rss = c + d * params + g * cell.data.instances + s_ * activations
        (run_dir / "cost.json").write_text(json.dumps({"peak_rss_mb": rss}))
        runs.append((run_dir, encoder, loader, rss))
    assert fit.cost_point(runs[1][0]).activations == 8 * cell.data.longest * 4 * 32
    fitted = fit_cost_model([run for run, _, _, _ in runs], per_instance={"ft": g})["ft"]
    assert (fitted.c, fitted.d, fitted.g, fitted.s) == (
        pytest.approx(c),
        pytest.approx(d),
        g,
        pytest.approx(s_),
    )
    assert ", s=0.0003" in fit.format_cost_model({"ft": fitted})
    # The plan of each run's cell is its peak, the longest batch included.
    for _, encoder, loader, rss in runs:
        planned = plan_cell(
            SST2_FT, ext_vars(model=encoder), overrides=loader, cost_model={"ft": fitted}
        )
        assert planned.peak_rss_mb == pytest.approx(rss)
    # Runs whose longest batches are alike (one batch size and width): s cannot be told, and
    # the memory is fitted as before, without it.
    alike = fit_cost_model([runs[0][0], runs[0][0]])["ft"]
    assert alike.s is None and ", s=" not in fit.format_cost_model({"ft": alike})


def test_one_encoder_at_several_data_sizes_fits_memory_per_instance(tmp_path):
    # The growth bench's case: MiniLM alone (P fixed), N from 1k to the full split. The
    # constant goes to c = BASE_RSS_MB and d, the growth to g. A run on a GPU is skipped.
    rss_at_zero, g, seconds_per_instance = 2100.0, 0.01, 0.02
    runs = []
    for size in (2, 5, 12):
        run_dir = tmp_path / f"n_{size}" / "sst2_bert_ft" / "seed_1"
        run_dir.mkdir(parents=True)
        config = render_config(SST2_FT, ext_vars(TUNE_MAX_INSTANCES=str(size)))
        (run_dir / "config.json").write_text(json.dumps(config))
        cost = {
            "mean_epoch_seconds": seconds_per_instance * size,
            "peak_rss_mb": rss_at_zero + g * size,
        }
        (run_dir / "cost.json").write_text(json.dumps(cost))
        runs.append(run_dir)
    gpu = tmp_path / "gpu" / "sst2_bert_ft" / "seed_1"
    shutil.copytree(runs[0], gpu)
    (gpu / "cost.json").write_text(
        json.dumps({"mean_epoch_seconds": 0.1, "peak_rss_mb": 9000.0, "peak_gpu_mb": 800.0})
    )
    assert fit.cost_point(gpu) is None
    fitted = fit_cost_model(runs + [gpu])["ft"]
    assert fitted.runs == 3 and fitted.g == pytest.approx(g)
    assert fitted.c == BASE_RSS_MB
    params = fit.cost_point(runs[0]).params
    assert fitted.peak_rss_mb(params, 0) == pytest.approx(rss_at_zero)
    assert fitted.peak_rss_mb(params, 1000) == pytest.approx(rss_at_zero + 1000 * g)
    # Memory that does not grow with N (or shrinks): no per-instance term.
    for run_dir in runs:
        cost = json.loads((run_dir / "cost.json").read_text())
        cost["peak_rss_mb"] = rss_at_zero - g * int(run_dir.parent.parent.name[2:])
        (run_dir / "cost.json").write_text(json.dumps(cost))
    assert fit_cost_model(runs)["ft"].g is None


def write_fe_run(folder: Path, variables, epoch_seconds, config: Path = SST2_FE) -> Path:
    run_dir = folder / config.name.replace(".jsonnet", "") / "seed_1"
    run_dir.mkdir(parents=True)
    (run_dir / "config.json").write_text(json.dumps(render_config(config, variables)))
    cost = {"epoch_seconds": epoch_seconds, "mean_epoch_seconds": sum(epoch_seconds) / 3}
    (run_dir / "cost.json").write_text(json.dumps(cost))
    return run_dir


def test_a_cached_fe_run_has_its_first_epoch_fitted_and_planned_apart(tmp_path, capsys):
    # A later epoch reads the cache: the head's work per wordpiece (k) and the L x H features
    # of each (e), no encoder. The first is a later one plus the encoder's pass (b, e).
    k, e, pass_b, pass_e = 2e-3, 4e-4, 9e-4, 3e-3
    runs = []
    for index, (layers, hidden) in enumerate([(2, 16), (4, 32), (3, 64)]):
        encoder = write_encoder(tmp_path / f"encoder_{index}", layers, hidden)
        variables = ext_vars(model=encoder)
        wordpieces = plan_cell(SST2_FE, variables).data.wordpieces
        work, linear = wordpieces * layers * hidden**2, wordpieces * layers * hidden
        later = k * wordpieces + e * linear
        # The later epochs vary around their line; their mean is on it.
        epochs = [later + pass_b * work + pass_e * linear, later - 0.5, later + 0.5]
        runs.append(write_fe_run(tmp_path / f"grid_{index}", variables, epochs))
    fitted = fit_cost_model(runs)["fe"]
    assert (fitted.a, fitted.b) == (0.0, 0.0)
    assert (fitted.k, fitted.e) == (pytest.approx(k), pytest.approx(e))
    assert (fitted.first_a, fitted.first_k) == (0.0, pytest.approx(k))
    assert (fitted.first_b, fitted.first_e) == (pytest.approx(pass_b), pytest.approx(e + pass_e))
    assert "k=0.002, first_k=0.002" in fit.format_cost_model({"fe": fitted})

    # Planned: the first epoch apart, the later ones, and the whole run at most.
    model = {"fe": fitted}
    wordpieces = plan_cell(SST2_FE, ext_vars()).data.wordpieces
    work, linear = wordpieces * 4 * 16**2, wordpieces * 4 * 16
    cell = plan_cell(SST2_FE, ext_vars(TUNE_EPOCHS="3"), cost_model=model)
    later = k * wordpieces + e * linear
    assert cell.first_epoch_seconds == pytest.approx(later + pass_b * work + pass_e * linear)
    assert cell.epoch_seconds == pytest.approx(later)
    assert cell.epochs == 3
    total = planned_run_seconds(cell)
    assert total == pytest.approx(cell.first_epoch_seconds + 2 * cell.epoch_seconds)
    table = render.render_plan([cell])
    row = next(line for line in table.splitlines() if line.startswith("| sst2_bert_fe"))
    duration = render.duration
    first, later = duration(cell.first_epoch_seconds), duration(cell.epoch_seconds)
    assert row.endswith(f"| {first} first, then {later} | {duration(total)} (3 epochs) |")
    # Without the cache every epoch runs the encoder: the first epoch's cost, each time.
    uncached = plan_cell(
        SST2_FE, ext_vars(TUNE_EPOCHS="3", TUNE_FEATURE_CACHE="false"), cost_model=model
    )
    assert uncached.first_epoch_seconds is None
    assert uncached.epoch_seconds == pytest.approx(cell.first_epoch_seconds)
    assert planned_run_seconds(uncached) == pytest.approx(3 * uncached.epoch_seconds)

    # One head in the runs: one pooled entry. A second head (the CoNLL-2003 tagger, one run of
    # one width) adds an entry per head, which the planner prefers; a head the table has not
    # seen gets the pooled entry.
    assert set(fit_cost_model(runs)) == {"fe"} and cell.cost_key == "fe"
    conll_work = plan_cell(CONLL_FE, ext_vars()).data.wordpieces * 4 * 16**2
    per_work = 2.5e-5
    tagger_run = write_fe_run(
        tmp_path / "tagger",
        ext_vars(),
        [3 * per_work * conll_work] + [per_work * conll_work] * 2,
        config=CONLL_FE,
    )
    model = fit_cost_model(runs + [tagger_run])
    assert set(model) == {"fe", "fe/tune_bcn", "fe/tune_tagger"}
    assert model["fe/tune_bcn"] == dataclasses.replace(
        fitted, fitted_on=model["fe/tune_bcn"].fitted_on
    )
    assert model["fe"].runs == 4 and model["fe/tune_tagger"].runs == 1
    # One run: through the origin, its own cost per unit of work, no width terms.
    tagger_cost = model["fe/tune_tagger"]
    assert (tagger_cost.a, tagger_cost.b) == (0.0, pytest.approx(per_work))
    assert (tagger_cost.first_b, tagger_cost.e, tagger_cost.k) == (
        pytest.approx(3 * per_work),
        None,
        None,
    )
    tagger = plan_cell(CONLL_FE, ext_vars(), cost_model=model)
    assert tagger.cost_key == "fe/tune_tagger"
    assert tagger.epoch_seconds == pytest.approx(model["fe/tune_tagger"].epoch_seconds(conll_work))
    assert "time and RAM from COST_MODEL['fe/tune_tagger']" in render.render_plan([tagger])
    del model["fe/tune_bcn"]
    assert plan_cell(SST2_FE, ext_vars(), cost_model=model).cost_key == "fe"

    # An fe run without a cache is not split: its mean epoch is fitted as it is.
    plain = write_fe_run(tmp_path / "plain", ext_vars(TUNE_FEATURE_CACHE="false"), [9, 9, 12])
    point = fit.cost_point(plain)
    assert (point.first_epoch_seconds, point.epoch_seconds) == (None, 10)
    # A cached run stopped after its first epoch gives the first epoch only.
    one = write_fe_run(tmp_path / "one", ext_vars(), [30])
    point = fit.cost_point(one)
    assert (point.first_epoch_seconds, point.epoch_seconds) == (30, None)


def test_metrics_json_is_the_fallback_measurement(tmp_path):
    run_dir = tmp_path / "sst2_bert_fe" / "seed_1"
    run_dir.mkdir(parents=True)
    metrics = {"training_duration": "0:01:30.000000", "epoch": 2, "peak_worker_0_memory_MB": 1500}
    (run_dir / "metrics.json").write_text(json.dumps(metrics))
    assert fit.measurement(run_dir) == (30.0, 1500)
    (run_dir / "cost.json").write_text(json.dumps({"mean_epoch_seconds": 7, "peak_rss_mb": 9}))
    assert fit.measurement(run_dir) == (7, 9)


def run_cli(add_parser, argv):
    import argparse

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(), "command")
    args = parser.parse_args(["command", *map(str, argv)])
    args.func(args)


def ext_var_arguments(**more):
    return [
        part for key, value in ext_vars(**more).items() for part in ("--ext-var", f"{key}={value}")
    ]


def test_the_command_line_flags(tmp_path, capsys):
    from allennlp_tune.commands.tune_compare import add_compare_parser
    from allennlp_tune.commands.tune_grid import add_grid_parser

    results = tmp_path / "results"
    run_cli(
        add_grid_parser, [SST2_FE, "--results-dir", results, "--plan-only", *ext_var_arguments()]
    )
    out = capsys.readouterr().out
    assert "| sst2_bert_fe | 12 |" in out and "trained" not in out
    assert not results.exists()
    overrides = json.dumps({f"{CACHE_OVERRIDE}.disk_mb": 0})
    with pytest.raises(SystemExit) as exited:
        run_cli(
            add_grid_parser,
            [SST2_FE, "--results-dir", results, "-o", overrides, *ext_var_arguments()],
        )
    assert exited.value.code == 2
    assert "feature_cache.disk_mb to at least" in capsys.readouterr().err
    assert not results.exists()
    with pytest.raises(SystemExit):
        run_cli(add_grid_parser, [SST2_FE, "--results-dir", results, "--plan-only", "--no-plan"])
    capsys.readouterr()
    # tune-compare: the mode configs are written, no run folder.
    compare_vars = ext_var_arguments()
    model_index = compare_vars.index(f"TUNE_BERT_MODEL={BERT}")
    del compare_vars[model_index - 1 : model_index + 1]
    run_cli(
        add_compare_parser,
        ["sst2", "--encoder", BERT, "--encoder-label", "tiny", "--results-dir", results]
        + ["--plan-only", *compare_vars],
    )
    out = capsys.readouterr().out
    assert "| sst2_tiny_fe | 12 |" in out and "| sst2_tiny_sf | 12 |" in out
    assert sorted(path.name for path in results.iterdir()) == ["configs"]


def test_plan_only_fails_on_what_would_fail_the_runs(tmp_path, capsys):
    """A seed numpy refuses, overrides that do not apply and a missing encoder exit with 2."""
    from allennlp_tune.commands.tune_grid import add_grid_parser

    results = tmp_path / "results"
    plan_only = [SST2_FE, "--results-dir", results, "--plan-only"]
    cases = [
        (["--seeds", "-1", *ext_var_arguments()], "--seeds: expected a whole number from 0"),
        ([*ext_var_arguments(), "-o", "{not json"], "does not render"),
        (
            ext_var_arguments(TUNE_BERT_MODEL=str(tmp_path / "no-such-model")),
            "encoder config not readable",
        ),
    ]
    for arguments, message in cases:
        with pytest.raises(SystemExit) as exited:
            run_cli(add_grid_parser, [*plan_only, *arguments])
        assert exited.value.code == 2
        assert message in capsys.readouterr().err
    assert not results.exists()


def test_the_cache_estimate_counts_the_validation_entries(tmp_path, monkeypatch):
    """The trainer's validation goes through the cache too: the estimate counts both splits."""
    from allennlp.commands.train import train_model
    from allennlp.common import Params

    data = tmp_path / "data"
    (data / "sst-2").mkdir(parents=True)
    words = "a fine film with a dull plot and some very good acting in it".split()
    train = [" ".join(words[i : i + 3 + i % 4]) for i in range(8)]  # 8 distinct sentences
    dev = [" ".join(reversed(words[i : i + 4 + i % 3])) for i in range(5)]  # 5 others
    assert len(set(train) | set(dev)) == 13
    for name, sentences in (("train.tsv", train), ("dev.tsv", dev)):
        rows = [f"{sentence}\t{i % 2}" for i, sentence in enumerate(sentences)]
        (data / "sst-2" / name).write_text("sentence\tlabel\n" + "\n".join(rows) + "\n")
    cache = tmp_path / "cache"
    variables = ext_vars(TUNE_DATA_DIR=str(data))
    cell = plan_cell(SST2_FE, variables, cache_directory=cache)
    assert (cell.data.sequences, cell.validation.sequences) == (8, 5)

    monkeypatch.setenv("TUNE_FEATURE_CACHE_DIR", str(cache))
    train_model(Params(render_config(SST2_FE, variables)), str(tmp_path / "run"))
    files = list(cache.rglob("*.f16"))
    assert len(files) == 13
    wordpieces = cell.data.wordpieces + cell.validation.wordpieces
    payload = 2 * wordpieces * cell.cache_layers * 16  # the fixture BERT: width 16
    sizes = sum(path.stat().st_size for path in files)
    assert payload < sizes <= payload + len(files) * ENTRY_HEADER_BYTES
    # The planner's number is the formula over what the run stored: both splits, 13 entries.
    assert cell.cache_bytes == estimated_cache_bytes(wordpieces, cell.cache_layers, 16, 13)
    # The train split's alone (the planner's before) falls short of the files' own bytes.
    train_only = estimated_cache_bytes(cell.data.wordpieces, cell.cache_layers, 16)
    assert train_only + 8 * ENTRY_HEADER_BYTES < sizes


@pytest.mark.parametrize(
    "mode, layers, cached",
    # The fixture BERT has 4 layers: top2 runs the forward pass through 4 and both backward
    # parts through 2, (4 + 4) / 12, and with the cache of its frozen layers only the block
    # after the first epoch, 2 / 4; bottom2 tunes the embeddings and layer 0 but its activation
    # gradients still run through all 4 layers, (8 + 1) / 12; a block of all 5 groups is ft.
    [
        ("top2", 8 / 12, 2 / 4),
        ("top1", 6 / 12, 1 / 4),
        ("bottom2", 9 / 12, None),
        ("top5", 1.0, None),
        ("bottom5", 1.0, None),
    ],
)
def test_a_block_mode_is_priced_from_ft_by_its_share_of_the_work(tmp_path, mode, layers, cached):
    library = REPO_ROOT / "allennlp_tune" / "configs" / "experiment.libsonnet"
    config = tmp_path / f"sst2_bert_{mode}.jsonnet"
    config.write_text(f'(import "{library}").cell("sst2", "bert", "{mode}")\n')
    ft = plan_cell(SST2_FT, ext_vars())
    cost = COST_MODEL[ft.cost_key]
    for cache in ("true", "false"):
        block = plan_cell(config, ext_vars(TUNE_FEATURE_CACHE=cache), cache_directory=tmp_path)
        assert block.mode == mode and block.cost_key == ft.cost_key
        # ft's two terms, W x L x H^2 and W x L x H, both scaled by the block's share.
        wordpieces = block.data.wordpieces
        work = cost.b * wordpieces * 4 * 16**2 + (cost.e or 0.0) * wordpieces * 4 * 16
        later = cached if cache == "true" and cached is not None else layers
        assert block.epoch_seconds == pytest.approx(cost.a + work * later)
        assert block.epoch_seconds <= ft.epoch_seconds
        if later != layers:  # the first epoch runs the frozen layers and stores their output
            assert block.first_epoch_seconds == pytest.approx(cost.a + work * layers)
            assert block.cache_layers == 1 and block.cache_bytes > 0
            assert " x 1 layer x 16 + " in render.render_plan([block])
        else:
            assert block.first_epoch_seconds is None
        assert block.peak_rss_mb == ft.peak_rss_mb
        assert any(f"ft's entry x {layers:.2f}" in note for note in block.notes)
