"""The planner's calibration: the time per epoch measured on this machine, the command's total,
and each finished run's time against its plan."""

import dataclasses
import importlib.util
import json
import logging
from pathlib import Path

import pytest

from allennlp_tune.data.paths import FIXTURE_DATA_DIR, FIXTURE_MODELS_DIR, REPO_ROOT
from allennlp_tune.experiments.grid import run_grid
from allennlp_tune.planning import calibrate, render
from allennlp_tune.planning.calibrate import BatchTiming, calibrate_cell
from allennlp_tune.planning.plan import plan_cell, planned_run_seconds, render_config

SST2_FE = REPO_ROOT / "training_config" / "sst2_bert_fe.jsonnet"
SST2_FT = REPO_ROOT / "training_config" / "sst2_bert_ft.jsonnet"
SST2_LORA = REPO_ROOT / "training_config" / "sst2_bert_lora.jsonnet"
VARIABLES = {
    "TUNE_DATA_DIR": str(FIXTURE_DATA_DIR),
    "TUNE_BERT_MODEL": str(FIXTURE_MODELS_DIR / "bert-uncased"),
    "TUNE_FEATURE_CACHE": "true",
    "TUNE_EPOCHS": "3",
    "TUNE_SEED": "1",
}


def fixed_timer(train=0.5, cached=None, forward=0.1, batch_size=4, first_forward=None):
    """A timer that measures nothing: the same seconds per batch every time."""

    def timer(rendered, is_cached, batches, cap_seconds):
        return BatchTiming(
            train,
            cached if is_cached else None,
            forward,
            batch_size,
            batches,
            first_forward if is_cached else None,
        )

    return timer


def test_ft_and_fe_cells_are_timed_on_this_machine(tmp_path):
    """The fixture encoder's real model and batches: a positive time per epoch, "calibrated",
    and a cached fe cell's first epoch apart; nothing is written to the user's cache folder."""
    cells = []
    for config in (SST2_FT, SST2_FE):
        cell = plan_cell(config, VARIABLES, cache_directory=tmp_path / "cache")
        model_seconds = cell.epoch_seconds
        assert calibrate_cell(cell, cell.rendered, batches=1, cap_seconds=5.0)
        assert cell.time_source == "calibrated" and cell.epoch_seconds > 0
        assert cell.epoch_seconds != model_seconds
        [note] = [n for n in cell.notes if n.startswith("time calibrated on this machine")]
        # 12 fixture sentences in batches of 32: one batch of each split, said so.
        assert "batches of 32): 1 train batch x " in note, note
        assert " + 1 validation batch x " in note, note
        cells.append(cell)
    ft, fe = cells
    assert ft.first_epoch_seconds is None
    assert fe.first_epoch_seconds > 0 and "read from the cache" in fe.notes[-1]
    assert not (tmp_path / "cache").exists()
    table = render.render_plan(cells)
    for cell in cells:
        row = next(line for line in table.splitlines() if line.startswith(f"| {cell.stem} |"))
        assert "(calibrated)" in row
    assert f"RAM from COST_MODEL[{ft.cost_key!r}]" in table


def test_the_planner_lets_go_of_the_timed_encoder_before_the_runs_start(tmp_path):
    """tune-compare's process waits beside its training children: the transformer AllenNLP
    cached while a cell was timed is dropped once the plan is timed (it held MPNet's weights
    and the freed heap, 4.8 GB, beside a 6.7 GB run)."""
    from allennlp.common import cached_transformers

    cell = plan_cell(SST2_FT, VARIABLES, cache_directory=tmp_path / "cache")
    cached_transformers.get(VARIABLES["TUNE_BERT_MODEL"], make_copy=False)
    assert cached_transformers._model_cache
    calibrate.calibrate_plans([cell], cap_seconds=5.0)
    assert cell.time_source == "calibrated"
    assert not cached_transformers._model_cache
    # Nothing timed (every cell had runs, or none rendered): nothing to let go of, nor reloaded.
    cached_transformers.get(VARIABLES["TUNE_BERT_MODEL"], make_copy=False)
    calibrate.calibrate_plans([])
    assert cached_transformers._model_cache


@pytest.mark.skipif(
    importlib.util.find_spec("peft") is None,
    reason="peft (allennlp-tune[lora]) is not installed; it needs torch >= 1.13",
)
def test_timing_a_lora_cell_says_nothing_before_the_plan(tmp_path, caplog):
    """Building a LoRA cell's model and optimizer logs its targets (INFO) and AllenNLP's warning
    that the LayerNorm parameter group matches no trainable parameter; both belong to the run's
    log, so the plan, printed before any run, comes without them."""
    cell = plan_cell(SST2_LORA, VARIABLES, cache_directory=tmp_path / "cache")
    with caplog.at_level(logging.INFO):
        assert calibrate_cell(cell, cell.rendered, batches=1, cap_seconds=5.0)
    assert cell.time_source == "calibrated"
    ours = [r.getMessage() for r in caplog.records if r.name.startswith("allennlp_tune.modules")]
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert not ours and not warnings, ours + warnings


def test_timing_a_bucketed_cell_says_nothing_of_its_sampler(caplog):
    """The timed batches come from the config's bucket sampler, built from its parameters: its
    INFO lines (each parameter, the sorting keys it guessed) are the run's log, not the plan's."""
    # Batches of 4 of the 12 fixture sentences: a warm-up batch, then two from the sampler.
    cell = plan_cell(
        SST2_FT, VARIABLES, overrides=json.dumps({"data_loader.batch_sampler.batch_size": 4})
    )
    assert cell.rendered["data_loader"]["batch_sampler"]["type"] == "bucket"
    with caplog.at_level(logging.INFO):
        assert calibrate_cell(cell, cell.rendered, batches=2, cap_seconds=5.0)
    assert cell.time_source == "calibrated"
    said = [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.name.startswith("allennlp")]
    assert not said, said


def test_a_model_that_does_not_build_keeps_the_cost_model_with_a_note():
    cell = plan_cell(SST2_FT, VARIABLES, overrides=json.dumps({"model.type": "no_such_head"}))
    before = (cell.epoch_seconds, cell.first_epoch_seconds)
    assert before[0] is not None  # priced from ft's entry
    assert not calibrate_cell(cell, cell.rendered)
    assert (cell.epoch_seconds, cell.first_epoch_seconds) == before
    assert cell.time_source == "cost model"
    assert any(
        note.startswith("not calibrated (ConfigurationError") and "cost model" in note
        for note in cell.notes
    )
    assert "(calibrated)" not in render.render_plan([cell])


def test_the_epoch_scales_with_the_counted_instances():
    """One measured batch, scaled: train batches x seconds + validation batches x forward."""
    cell = plan_cell(SST2_FT, VARIABLES)
    assert calibrate_cell(cell, cell.rendered, fixed_timer())
    instances = cell.data.instances  # 12 fixture sentences: 3 batches of 4
    doubled = plan_cell(SST2_FT, VARIABLES)
    doubled.data = dataclasses.replace(doubled.data, instances=2 * instances)
    assert calibrate_cell(doubled, doubled.rendered, fixed_timer())
    # The validation batches are the same; the train batches double, 0.5 s each.
    extra = (-(-2 * instances // 4) - -(-instances // 4)) * 0.5
    assert doubled.epoch_seconds - cell.epoch_seconds == pytest.approx(extra)
    assert 1.5 < doubled.epoch_seconds / cell.epoch_seconds < 2.5
    # A cached cell: the first pass for the first epoch, the cached pass for the later ones.
    fe = plan_cell(SST2_FE, VARIABLES)
    assert calibrate_cell(fe, fe.rendered, fixed_timer(train=0.5, cached=0.2))
    assert fe.first_epoch_seconds - fe.epoch_seconds == pytest.approx(3 * (0.5 - 0.2))
    assert planned_run_seconds(fe) == pytest.approx(fe.first_epoch_seconds + 2 * fe.epoch_seconds)
    # Its first validation runs the encoder too (0.4 s a batch against 0.1 read from the cache):
    # 2 validation batches of the fixture's dev sentences; the later epochs are unchanged.
    first_dev = plan_cell(SST2_FE, VARIABLES)
    assert calibrate_cell(
        first_dev, first_dev.rendered, fixed_timer(train=0.5, cached=0.2, first_forward=0.4)
    )
    assert first_dev.epoch_seconds == pytest.approx(fe.epoch_seconds)
    assert -(-first_dev.validation.instances // 4) == 2
    assert first_dev.first_epoch_seconds - fe.first_epoch_seconds == pytest.approx(2 * (0.4 - 0.1))
    assert "x 0.100 s (0.400 s in the first epoch)" in first_dev.notes[-1]


def test_a_cached_cell_times_its_first_validation_on_a_batch_it_did_not_train(tmp_path):
    """The fixture's fe cell in batches of 4: the warm-up and one timed batch train, and a third
    batch of the 12 sentences is held out, forwarded once to fill the cache (the first epoch's
    validation) and once to read it back; an uncached cell and a split with no batch to spare
    time their validation once."""
    four = json.dumps({"data_loader.batch_sampler.batch_size": 4})
    fe = plan_cell(SST2_FE, VARIABLES, overrides=four, cache_directory=tmp_path / "cache")
    timing = calibrate.time_batches(fe.rendered, cached=True, batches=1, cap_seconds=30.0)
    assert timing.batches == 1 and timing.batch_size == 4
    assert timing.first_forward_seconds is not None and timing.forward_seconds is not None
    ft = plan_cell(SST2_FT, VARIABLES, overrides=four)
    timing = calibrate.time_batches(ft.rendered, cached=False, batches=1, cap_seconds=30.0)
    assert timing.first_forward_seconds is None and timing.forward_seconds is not None
    # Two timed batches and a warm-up take all 12 sentences: nothing left to hold out.
    timing = calibrate.time_batches(fe.rendered, cached=True, batches=2, cap_seconds=30.0)
    assert timing.batches == 2 and timing.first_forward_seconds is None


def test_the_estimate_error_after_a_run():
    cell = plan_cell(SST2_FT, VARIABLES)
    cell.epoch_seconds, cell.time_source = 60.0, "calibrated"
    said = render.estimate_error(cell, {"epoch_seconds": [80.0, 70.0], "epochs": 2}, 200.0)
    assert said == "took 2:30 (training, 2 epochs), planned 2:00 (+25%, calibrated)"
    # No cost.json: the run's wall time against the whole planned run (3 epochs).
    said = render.estimate_error(cell, None, 171.0)
    assert said == "took 2:51 (run, wall time, 3 epochs), planned 3:00 (-5%, calibrated)"
    cell.epoch_seconds = None
    assert render.estimate_error(cell, {"epoch_seconds": [1.0]}, 1.0) is None


def fake_training(command, environment, log_path):
    """Stands in for `allennlp train`: what a finished run leaves, epochs of 9 s."""
    run_dir = Path(command[command.index("-s") + 1])
    run_dir.mkdir()
    config = render_config(Path(command[command.index("train") + 1]), environment)
    (run_dir / "config.json").write_text(json.dumps(config))
    (run_dir / "metrics.json").write_text(json.dumps({"best_validation_accuracy": 0.5}))
    (run_dir / "cost.json").write_text(json.dumps({"epoch_seconds": [9.0, 9.0], "epochs": 2}))
    (run_dir / "model.tar.gz").write_bytes(b"")
    log_path.write_text("training\n")
    return 0


def test_the_grid_prints_the_total_and_each_run_against_its_plan(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(calibrate.CALIBRATE_ENV, "1")
    calls = []
    timer = fixed_timer(train=1.0, forward=0.0)
    monkeypatch.setattr(calibrate, "time_batches", lambda *args: calls.append(1) or timer(*args))
    variables = {key: value for key, value in VARIABLES.items() if key != "TUNE_SEED"}
    run_grid(
        [SST2_FT],
        [1, 2],
        tmp_path / "grid",
        variables,
        runner=fake_training,
        predict=None,
        progress=False,
    )
    err = capsys.readouterr().err
    assert "tune-grid: plan of the 1 cell(s) with runs to do" in err
    # 12 instances in batches of 4: 3 s per epoch, 9 s per run of 3 epochs, two seeds.
    assert "| 3 s (calibrated) | 9 s (3 epochs) |" in err
    assert "Estimated total: 18 s at most for 2 run(s) (time from calibrated;" in err
    # Each run took 2 epochs of 9 s against 2 planned epochs of 3 s.
    for seed in (1, 2):
        line = f"sst2_bert_ft seed {seed} took 0:18 (training, 2 epochs), planned 0:06 (+200%"
        assert line in err
    # A later grid of the same config (tune-compare's next round: another seed) is not timed
    # again in this process.
    run_grid(
        [SST2_FT],
        [3],
        tmp_path / "grid",
        variables,
        runner=fake_training,
        predict=None,
        progress=False,
    )
    assert len(calls) == 1
    assert "| 3 s (calibrated) |" in capsys.readouterr().err


def test_no_calibrate_gives_the_cost_model_numbers(tmp_path, capsys, monkeypatch):
    import argparse

    from allennlp_tune.commands.tune_grid import add_grid_parser

    def never(*args):
        raise AssertionError("calibrated despite --no-calibrate")

    monkeypatch.setenv(calibrate.CALIBRATE_ENV, "1")
    monkeypatch.setattr(calibrate, "time_batches", never)
    variables = [
        part
        for key, value in VARIABLES.items()
        if key != "TUNE_SEED"
        for part in ("--ext-var", f"{key}={value}")
    ]
    results = tmp_path / "results"
    parser = argparse.ArgumentParser()
    add_grid_parser(parser.add_subparsers(), "tune-grid")
    argv = [SST2_FT, "--results-dir", results, "--plan-only", "--no-calibrate", *variables]
    args = parser.parse_args(["tune-grid", *map(str, argv)])
    args.func(args)
    out = capsys.readouterr().out
    cell = plan_cell(SST2_FT, VARIABLES)
    row = next(line for line in out.splitlines() if line.startswith("| sst2_bert_ft |"))
    assert row.endswith(
        f"| {render.duration(cell.epoch_seconds)} | "
        f"{render.duration(planned_run_seconds(cell))} (3 epochs) |"
    )
    assert "calibrated" not in row and "time from cost model" in out


def test_a_setting_that_changes_only_rate_epochs_or_seed_is_not_timed_again(tmp_path):
    """The seeds after a --budget search train the timed cell at another rate and number of
    epochs: the same timing key; another model (fe against ft) is another key."""
    ft = plan_cell(SST2_FT, VARIABLES, cache_directory=tmp_path / "cache").rendered
    other = plan_cell(
        SST2_FT,
        {**VARIABLES, "TUNE_LR": "1e-4", "TUNE_EPOCHS": "6", "TUNE_SEED": "7"},
        cache_directory=tmp_path / "cache",
    ).rendered
    assert other["trainer"]["num_epochs"] == 6 and other != ft
    assert calibrate.timing_key(other) == calibrate.timing_key(ft)
    fe = plan_cell(SST2_FE, VARIABLES, cache_directory=tmp_path / "cache").rendered
    assert calibrate.timing_key(fe) != calibrate.timing_key(ft)


def test_timed_batches_are_grouped_by_length_as_the_bucket_sampler_groups_them():
    """A warm-up batch of the first instances, then the rest as the config's bucket sampler
    batches them: every instance once, each batch of similar lengths, so less padding than the
    same instances in file order (which is what the calibration timed before, 33% over)."""
    from allennlp.data import Instance, Token, Vocabulary
    from allennlp.data.fields import TextField
    from allennlp.data.token_indexers import SingleIdTokenIndexer

    from allennlp_tune.planning.calibrate import batches_as_loaded

    lengths = [3, 17, 5, 29, 8, 2, 23, 11, 31, 4, 19, 7, 13, 27, 6, 21]
    instances = [
        Instance({"tokens": TextField([Token(f"w{n}")] * n, {"tokens": SingleIdTokenIndexer()})})
        for n in lengths
    ]
    vocabulary = Vocabulary.from_instances(instances)
    loader = {"batch_sampler": {"type": "bucket", "batch_size": 32, "padding_noise": 0.0}}
    groups = batches_as_loaded(instances, loader, vocabulary, batch_size=4)
    assert groups[0] == instances[:4]  # the warm-up batch, untimed
    assert sorted(id(i) for group in groups for i in group) == sorted(map(id, instances))
    sizes = [[len(i["tokens"]) for i in group] for group in groups[1:]]
    assert all(len(size) == 4 for size in sizes)
    assert sorted(sorted(size) for size in sizes) == [
        sorted(lengths[4:])[k : k + 4] for k in range(0, 12, 4)
    ]

    def padded(batches):
        return sum(len(batch) * max(len(i["tokens"]) for i in batch) for batch in batches)

    in_order = batches_as_loaded(instances, {"batch_size": 4}, vocabulary, batch_size=4)
    assert [len(group) for group in in_order] == [4, 4, 4, 4]
    assert in_order[1:] == [instances[k : k + 4] for k in (4, 8, 12)]
    assert padded(groups[1:]) < padded(in_order[1:])


def _finished_run(folder, rendered, seconds, host):
    """A finished run folder as a training child leaves it: its config and cost.json."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(rendered))
    cost = {"epoch_seconds": seconds, "epochs": len(seconds), "finished": True, "host": host}
    (folder / "cost.json").write_text(json.dumps(cost))
    return folder


def _forbid_timing(monkeypatch, why):
    """From here on a timed batch fails the test with `why`; the timings this process
    remembered are forgotten, as in a fresh process."""

    def never(*args):
        raise AssertionError(why)

    monkeypatch.setattr(calibrate, "_TIMINGS", {})
    monkeypatch.setattr(calibrate, "time_batches", never)


def test_a_cell_with_finished_runs_on_this_machine_takes_their_epochs(tmp_path):
    """A cached fe cell with two finished runs here (another seed and rate: the same timing
    key): the median first epoch and the median later one, no batch timed. A run of another
    host, one of another batch size and one still training are not read."""
    import platform

    def never(*args):
        raise AssertionError("timed batches despite finished runs of this machine")

    cell = plan_cell(SST2_FE, VARIABLES, cache_directory=tmp_path / "cache")
    other_seed = plan_cell(SST2_FE, {**VARIABLES, "TUNE_SEED": "5", "TUNE_LR": "3e-4"}).rendered
    bigger = plan_cell(SST2_FE, {**VARIABLES, "TUNE_BATCH_SIZE": "64"}).rendered
    here = platform.node()
    cell.finished_runs = [
        _finished_run(tmp_path / "seed_1", cell.rendered, [30.0, 10.0, 12.0], here),
        _finished_run(tmp_path / "seed_5", other_seed, [28.0, 11.0, 9.0], here),
        _finished_run(tmp_path / "seed_6", cell.rendered, [300.0, 300.0], here + "-elsewhere"),
        _finished_run(tmp_path / "seed_7", bigger, [3.0, 1.0], here),
    ]
    running = _finished_run(tmp_path / "seed_8", cell.rendered, [1.0, 1.0], here)
    cost = json.loads((running / "cost.json").read_text())
    (running / "cost.json").write_text(json.dumps({**cost, "finished": False}))
    cell.finished_runs.append(running)
    calibrate.calibrate_plans([cell], timer=never)
    assert cell.time_source == "measured"
    assert (cell.first_epoch_seconds, cell.epoch_seconds) == (29.0, 10.5)
    assert cell.notes[-1] == (
        "time measured on this machine: 2 finished runs of this cell (6 epochs), median first "
        "epoch 29.0 s, later 10.5 s; no batches timed"
    )
    row = next(line for line in render.render_plan([cell]).splitlines() if "sst2_bert_fe" in line)
    assert "| 29 s first, then 10 s (measured) |" in row


def test_a_cached_cell_pays_for_filling_its_cache_once_per_grid(tmp_path, capsys, monkeypatch):
    """An fe cell's seeds share the grid's cache: the plan charges the first epoch's encoder
    pass (5 s a batch against 1 s read from the cache) to the first run only, and each run is
    measured against its own plan. Then a grid with another seed plans from the finished runs'
    epochs: the first epoch that filled the cache (30 s), not seed 2's, which read it (11 s)."""
    import platform

    filled = []

    def fe_training(command, environment, log_path):
        code = fake_training(command, environment, log_path)
        run_dir = Path(command[command.index("-s") + 1])
        seconds = [11.0, 10.0, 10.0] if filled else [30.0, 10.0, 10.0]
        filled.append(run_dir.name)
        cost = {"epoch_seconds": seconds, "epochs": 3, "finished": True, "host": platform.node()}
        (run_dir / "cost.json").write_text(json.dumps(cost))
        return code

    monkeypatch.setenv(calibrate.CALIBRATE_ENV, "1")
    monkeypatch.setattr(calibrate, "time_batches", fixed_timer(train=5.0, cached=1.0, forward=0.0))
    variables = {key: value for key, value in VARIABLES.items() if key != "TUNE_SEED"}
    options = dict(runner=fe_training, predict=None, progress=False)
    run_grid([SST2_FE], [1, 2], tmp_path / "grid", variables, **options)
    err = capsys.readouterr().err
    # 3 train batches: 15 s the first epoch, 3 s the later ones; 21 s the first run, 9 s the
    # second (every epoch from the cache), 30 s in all where every seed refilling it was 42 s.
    assert "| 15 s first, then 3 s (calibrated) | 21 s (3 epochs) |" in err
    assert "Estimated total: 30 s at most for 2 run(s)" in err
    assert "sst2_bert_fe seed 1 took 0:50 (training, 3 epochs), planned 0:21 (+138%" in err
    assert "sst2_bert_fe seed 2 took 0:31 (training, 3 epochs), planned 0:09 (+244%" in err

    _forbid_timing(monkeypatch, "timed batches despite finished runs of this machine")
    run_grid([SST2_FE], [3], tmp_path / "grid", variables, **options)
    err = capsys.readouterr().err
    assert "| 30 s first, then 10 s (measured) | 50 s (3 epochs) |" in err
    assert "2 finished runs of this cell (6 epochs), median first epoch 30.0 s, later 10.0 s" in err


def test_runs_that_only_read_a_filled_cache_do_not_price_filling_it(tmp_path):
    """A cached cell whose finished runs all read a cache filled before them (first epochs
    like the later ones) cannot say what filling it costs: its batches are timed instead."""
    import platform

    cell = plan_cell(SST2_FE, VARIABLES, cache_directory=tmp_path / "cache")
    here = platform.node()
    cell.finished_runs = [
        _finished_run(tmp_path / "seed_2", cell.rendered, [11.0, 10.0, 10.0], here),
        _finished_run(tmp_path / "seed_3", cell.rendered, [10.0, 12.0], here),
    ]
    calibrate.calibrate_plans([cell], timer=fixed_timer(train=5.0, cached=1.0, forward=0.0))
    assert cell.time_source == "calibrated"
    assert (cell.first_epoch_seconds, cell.epoch_seconds) == (15.0, 3.0)


def test_a_rerun_with_other_seeds_plans_from_the_first_runs_epochs(tmp_path, capsys, monkeypatch):
    """Seeds 1 and 2 trained here (epochs of 9 s); a later grid with seed 3, in a process
    that timed nothing (no remembered timing), plans 9 s per epoch from them and times no
    batch."""
    import platform

    def finished_here(command, environment, log_path):
        code = fake_training(command, environment, log_path)
        run_dir = Path(command[command.index("-s") + 1])
        cost = json.loads((run_dir / "cost.json").read_text())
        cost.update(finished=True, host=platform.node())
        (run_dir / "cost.json").write_text(json.dumps(cost))
        return code

    monkeypatch.setenv(calibrate.CALIBRATE_ENV, "1")
    monkeypatch.setattr(calibrate, "time_batches", fixed_timer(train=1.0, forward=0.0))
    variables = {key: value for key, value in VARIABLES.items() if key != "TUNE_SEED"}
    options = dict(runner=finished_here, predict=None, progress=False)
    run_grid([SST2_FT], [1, 2], tmp_path / "grid", variables, **options)
    err = capsys.readouterr().err
    assert "| 3 s (calibrated) |" in err
    assert "tune-grid: timing a few training batches of each cell on this machine" in err

    _forbid_timing(monkeypatch, "timed batches despite finished runs of this machine")
    run_grid([SST2_FT], [3], tmp_path / "grid", variables, **options)
    err = capsys.readouterr().err
    assert "| 9 s (measured) | 27 s (3 epochs) |" in err
    assert "time measured on this machine: 2 finished runs of this cell (4 epochs)" in err
    assert "timing a few training batches" not in err  # nothing was
    assert "sst2_bert_ft seed 3 took 0:18 (training, 2 epochs), planned 0:18 (+0%, measured)" in err


def test_the_seeds_after_a_search_plan_from_its_trials_epochs(tmp_path, capsys, monkeypatch):
    """The seeds of a --budget decision: the grid after the search finds the cell's trials in
    `search/<cell>/trial_*` (two of this machine, one of another host) and plans from their
    epochs, timing no batch."""
    import platform

    monkeypatch.setenv(calibrate.CALIBRATE_ENV, "1")
    _forbid_timing(monkeypatch, "timed batches despite search trials of this machine")
    variables = {key: value for key, value in VARIABLES.items() if key != "TUNE_SEED"}
    results = tmp_path / "decision"
    trials = results / "search" / "sst2_bert_ft"
    for index, (rate, seconds) in enumerate([("2e-5", [7.0, 8.0]), ("3e-5", [9.0, 8.0, 8.0])]):
        rendered = plan_cell(SST2_FT, {**variables, "TUNE_SEED": "0", "TUNE_LR": rate}).rendered
        _finished_run(trials / f"trial_{index}", rendered, seconds, platform.node())
    elsewhere = plan_cell(SST2_FT, {**variables, "TUNE_SEED": "0"}).rendered
    _finished_run(trials / "trial_2", elsewhere, [90.0, 90.0], platform.node() + "-elsewhere")
    run_grid([SST2_FT], [1], results, variables, runner=fake_training, predict=None, progress=False)
    err = capsys.readouterr().err
    assert "| 8 s (measured) | 24 s (3 epochs) |" in err, err
    assert "time measured on this machine: 2 finished runs of this cell (5 epochs)" in err
    assert "timing a few training batches" not in err


def test_a_calibration_under_load_says_so():
    """The 1-minute load average beyond the timing's own process, against the CPUs: more than
    half of them busy with other work is named in the note, less is not."""
    from allennlp_tune.planning.calibrate import load_note

    assert load_note(load=1.9, cpus=2) == ""
    assert load_note(load=0.3, cpus=16) == ""
    note = load_note(load=3.1, cpus=2)
    assert note.startswith("; timed while the machine was loaded (load average 3.1 on 2 CPUs")
    assert "the runs' own epochs replace them as they finish" in note
    assert load_note(load=10.5, cpus=16).startswith("; timed while the machine was loaded")
