"""tune-report with the bitfit and lora modes, the cost tables and runs without costs."""

import json
import sys

import pytest

from allennlp_tune.reporting.html_report import render_report_html
from allennlp_tune.reporting.render import render_json, render_markdown
from allennlp_tune.reporting.report import report_from_dirs
from allennlp_tune.rundir import parse_run_name


def table_rows(markdown, title):
    """{first cell: cells} of the rows of the table under `## title`."""
    section = markdown.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    return {
        row.split(" | ")[0][2:]: [cell.strip() for cell in row.strip("| ").split(" | ")]
        for row in rows[1:]
    }


MB = 2**20


def cost(trainable, total=110_000_000, stored=None, seconds=(40.0, 44.0), rss=2000.0, **extra):
    return {
        "trainable_params": trainable,
        "encoder_trainable_params": trainable,
        "total_params": total,
        "encoder_params": total - 1000,
        "stored_params": total if stored is None else stored,
        "epoch_seconds": list(seconds),
        "mean_epoch_seconds": sum(seconds) / len(seconds),
        "peak_rss_mb": rss,
        "peak_gpu_mb": None,
        "epochs": len(seconds),
        "finished": True,
        **extra,
    }


def add_outputs(run_dir, cost_json=None, predictions=True):
    """The run's cost.json and dev predictions, which give its accuracy in metrics.json (the
    report recomputes it: `reporting.verify`), right on the first examples of 1000."""
    if cost_json is not None:
        (run_dir / "cost.json").write_text(json.dumps(cost_json))
    if predictions:
        metrics = json.loads((run_dir / "metrics.json").read_text())
        right = round(1000 * metrics.get("best_validation_accuracy", 1.0))
        lines = [
            json.dumps({"index": k, "gold": "0", "prediction": "0" if k < right else "1"})
            for k in range(1000)
        ]
        (run_dir / "dev_predictions.jsonl").write_text("\n".join(lines) + "\n")
    return run_dir


@pytest.fixture
def grid(tmp_path, make_run):
    """A SICK-E grid of five modes as tune-grid leaves it, with costs and predictions."""
    root = tmp_path / "runs"
    scores = {"fe": 0.80, "ft": 0.85, "sf": 0.84, "bitfit": 0.83, "lora": 0.845}
    trainable = {"fe": 1_500_000, "ft": 110_000_000, "sf": 110_000_000, "bitfit": 1_600_000,
                 "lora": 1_900_000}  # fmt: skip
    stored = {"bitfit": 1_600_000, "lora": 1_900_000}
    for mode, score in scores.items():
        for seed in (1, 2):
            run_dir = make_run(root / f"sick_e_bert_{mode}" / f"seed_{seed}", seed, score)
            add_outputs(
                run_dir,
                cost(
                    trainable[mode],
                    stored=stored.get(mode),
                    rss=1000.0 * seed,
                    archive_bytes=(stored.get(mode, 110_000_000) * 4) + seed * MB,
                ),
            )
    return root


def test_run_names_with_the_new_modes():
    name, seed = parse_run_name("sick_e_bert_lora_seed2")
    assert (name.task, name.encoder, name.mode, name.variant, seed) == (
        "sick_e", "bert", "lora", None, 2
    )  # fmt: skip
    name, _ = parse_run_name("sts_b_bert_bitfit_high_lr")
    assert (name.task, name.mode, name.variant) == ("sts_b", "bitfit", "high_lr")
    assert parse_run_name("conll2003_bert_ft_lora")[0].mode == "ft"  # a variant, not the mode


def test_bitfit_and_lora_columns_and_the_cost_table(grid):
    markdown = render_markdown(report_from_dirs([grid]))
    header = next(line for line in markdown.splitlines() if line.startswith("| Task | Metric"))
    assert header.endswith("| sf (ours) | bitfit (ours) | lora (ours) |")
    bert = table_rows(markdown, "BERT")
    # The verdict from dev predictions that give each run its score (0.80 vs 0.85 of 1000).
    assert bert["SICK-E"][6:8] == ["+5.0", "ft +5.0 [+3.7, +6.4]"]
    assert bert["SICK-E"][9:] == ["84.0 ± 0.0 (n=2)", "83.0 ± 0.0 (n=2)", "84.5 ± 0.0 (n=2)"]

    section = markdown.split("## BERT: costs (mean over runs)\n", 1)[1]
    assert section.splitlines()[1] == (
        "| Cell | Trainable params | Stored params | s/epoch | Peak RSS MB | Archive MB "
        "| Runs with costs |"
    )  # no GPU column: no run has a GPU peak
    rows = [line for line in section.split("\n## ")[0].splitlines() if line.startswith("| ")]
    modes = [row.split(" | ")[0].split()[-1] for row in rows[1:]]
    assert modes == ["fe", "ft", "sf", "bitfit", "lora"]  # RUN_MODES order
    by_mode = {
        row.split(" | ")[0].split()[-1]: [c.strip() for c in row.strip("| ").split(" | ")]
        for row in rows[1:]
    }
    assert by_mode["ft"][1:] == [
        "110.00M (100%)",
        "110.00M",
        "42.0",
        "1500.0",
        f"{(110_000_000 * 4 + 1.5 * MB) / MB:.1f}",
        "2/2",
    ]
    assert by_mode["bitfit"][1:3] == ["1.60M (1.45%)", "1.60M"]
    assert by_mode["lora"][1:3] == ["1.90M (1.73%)", "1.90M"]
    assert not any(line.startswith("| SICK-E |") for line in section.splitlines())
    assert by_mode["lora"][5] == f"{(1_900_000 * 4 + 1.5 * MB) / MB:.1f}"
    assert "Scored runs without costs or dev predictions" not in markdown


def test_gpu_column_when_a_run_has_it(grid):
    run_dir = grid / "sick_e_bert_ft" / "seed_1"
    data = json.loads((run_dir / "cost.json").read_text())
    (run_dir / "cost.json").write_text(json.dumps({**data, "peak_gpu_mb": 5000.0}))
    markdown = render_markdown(report_from_dirs([grid]))
    section = markdown.split("## BERT: costs (mean over runs)\n", 1)[1]
    assert "| Peak RSS MB | Peak GPU MB | Archive MB |" in section.splitlines()[1]
    rows = {
        line.split(" | ")[0].split()[-1]: line for line in section.splitlines() if "SICK-E" in line
    }
    assert "| 5000.0 |" in rows["ft"] and "| n/a |" in rows["fe"]


def test_json_has_the_costs_and_the_new_modes(grid, tmp_path):
    data = render_json(report_from_dirs([grid]))
    [row] = data["rows"]
    assert list(row["cells"]) == ["fe", "ft", "sf", "bitfit", "lora"]
    lora = row["cells"]["lora"]
    assert lora["cost"]["trainable_params"] == 1_900_000
    assert lora["cost"]["peak_rss_mb"] == pytest.approx(1500.0)
    assert lora["cost"]["runs_with_costs"] == 2
    assert lora["runs"][0]["cost"]["stored_params"] == 1_900_000
    assert lora["runs"][0]["predictions"] is True
    assert data["runs_without_costs"] == [] and data["runs_without_predictions"] == []
    json.dumps(data, allow_nan=False)


def test_old_runs_without_costs_still_report_and_say_so(tmp_path, make_run):
    root = tmp_path / "runs"
    for seed in (1, 2):
        make_run(root / "sick_e_bert_fe" / f"seed_{seed}", seed, 0.80)
        make_run(root / "sick_e_bert_ft" / f"seed_{seed}", seed, 0.85)
    markdown = render_markdown(report_from_dirs([root]))
    # Today's table, no bitfit/lora columns and no cost table.
    header = next(line for line in markdown.splitlines() if line.startswith("| Task | Metric"))
    assert header.endswith("| Δ (paper) | sf (ours) |")
    assert table_rows(markdown, "BERT")["SICK-E"][2] == "80.0 ± 0.0 (n=2)"
    assert "costs (mean over runs)" not in markdown
    notes = markdown.split("## Scored runs without costs or dev predictions\n", 1)[1]
    assert "None of the 4 scored runs recorded its costs (cost.json" in notes
    assert "None of the 4 scored runs has dev_predictions.jsonl" in notes
    data = render_json(report_from_dirs([root]))
    assert list(data["rows"][0]["cells"]) == ["fe", "ft", "sf"]
    assert data["rows"][0]["cells"]["fe"]["cost"]["trainable_params"] is None
    assert len(data["runs_without_costs"]) == 4


def test_a_mix_of_old_and_new_runs_names_the_runs_without_costs(grid, make_run):
    old = make_run(grid / "sick_e_bert_fe" / "seed_3", 3, 0.80)
    # A grid run of a config without the tune_cost callback: only the archive's size.
    partial = add_outputs(
        make_run(grid / "sick_e_bert_ft" / "seed_3", 3, 0.85), {"archive_bytes": 3 * MB}
    )
    report = report_from_dirs([grid])
    markdown = render_markdown(report)
    by_mode = {
        line.split(" | ")[0].split()[-1]: line
        for line in markdown.split("## BERT: costs (mean over runs)\n", 1)[1].splitlines()
        if line.startswith("| SICK-E ")
    }
    assert by_mode["fe"].endswith("| 2/3 |") and by_mode["ft"].endswith("| 2/3 |")
    notes = markdown.split("## Scored runs without costs or dev predictions\n", 1)[1]
    lines = [line for line in notes.splitlines() if line.startswith("- ")]
    assert len(lines) == 2
    assert lines[0].endswith("seed_3: no costs (cost.json), no dev_predictions.jsonl")
    assert str(old.name) in lines[0] and "sick_e_bert_fe" in lines[0]
    assert "sick_e_bert_ft" in lines[1] and lines[1].endswith(": no costs (cost.json)")
    assert str(partial) in render_json(report)["runs_without_costs"]
    assert "<h2>BERT: costs (mean over runs)</h2>" in render_report_html(report)


def test_a_run_still_training_is_not_in_the_cost_means(grid, make_run):
    # The ft cell's two finished runs: 42.0 s/epoch and 1500 MB on average. A third run is in
    # its first epochs (no metrics.json yet): its cost.json says what it has cost so far.
    running = make_run(grid / "sick_e_bert_ft" / "seed_3", 3, metrics=False)
    add_outputs(
        running,
        cost(110_000_000, seconds=(20.0,), rss=900.0, finished=False, archive_bytes=MB),
        predictions=False,
    )
    report = report_from_dirs([grid])
    markdown = render_markdown(report)
    ft = table_rows(markdown, "BERT: costs (mean over runs)")["SICK-E ft"]
    assert ft[3:5] == ["42.0", "1500.0"]  # with the running run: 34.7 and 1300.0
    assert ft[5] == f"{(110_000_000 * 4 + 1.5 * MB) / MB:.1f}"
    assert ft[-1] == "2/3"
    assert "incomplete (1/3)" in table_rows(markdown, "BERT")["SICK-E"][4]
    cell = render_json(report)["rows"][0]["cells"]["ft"]["cost"]
    assert cell["mean_epoch_seconds"] == pytest.approx(42.0)
    assert cell["runs_with_costs"] == 2


def test_tune_report_command_writes_costs_to_json(grid, tmp_path, monkeypatch, capsys):
    from allennlp.commands import main

    import allennlp_tune.commands.tune_report  # noqa: F401

    out = tmp_path / "r.json"
    monkeypatch.setattr(sys, "argv", ["allennlp", "tune-report", str(grid), "--json", str(out)])
    main()
    assert "## BERT: costs (mean over runs)" in capsys.readouterr().out
    data = json.loads(out.read_text())
    assert data["rows"][0]["cells"]["bitfit"]["cost"]["stored_params"] == 1_600_000


def test_trainable_share_never_rounds_a_frozen_encoder_away():
    from allennlp_tune.reporting.costs import _share

    assert _share(20_910_000, 20_925_000) == ">99.9%"  # a tiny frozen encoder under a big head
    assert _share(5, 5) == "100%" and _share(1, 3) == "33.3%" and _share(1, 80) == "1.25%"


def test_encoder_passes_count_instances_per_epoch_and_the_cache(tmp_path, make_run):
    """ft: forward and backward every epoch; fe with a feature cache: forward in its first
    epoch only (the later ones read the cache); fe without one: forward every epoch."""
    root = tmp_path / "runs"
    epochs = {"epoch_instances": [1000, 1000, 1000]}
    cells = {
        "sick_e_bert_ft": ({"epoch_encoder_trained": [True] * 3}, None),
        "sick_e_bert_fe": ({"epoch_encoder_trained": [False] * 3}, {}),
        "sick_e_bert_sf": ({"epoch_encoder_trained": [False, True, True]}, {}),
        "mrpc_bert_fe": ({"epoch_encoder_trained": [False] * 3}, None),
    }
    for cell, (trained, cache) in cells.items():
        run_dir = make_run(root / cell / "seed_1", 1, 0.8)
        if cache is not None:
            config = json.loads((run_dir / "config.json").read_text())
            config["model"] = {"embedder": {"feature_cache": cache}}
            (run_dir / "config.json").write_text(json.dumps(config))
        add_outputs(run_dir, cost(1000, seconds=(1.0, 1.0, 1.0), **epochs, **trained))
    markdown = render_markdown(report_from_dirs([root], intervals=False))
    rows = table_rows(markdown, "BERT: costs (mean over runs)")
    assert rows["SICK-E ft"][-2] == "3.0k fwd+bwd, 0 fwd"
    assert rows["SICK-E fe"][-2] == "0 fwd+bwd, 1.0k fwd"
    assert rows["SICK-E sf"][-2] == "2.0k fwd+bwd, 1.0k fwd"
    assert rows["MRPC fe"][-2] == "0 fwd+bwd, 3.0k fwd"
    assert "| Encoder passes | Runs with costs |" in markdown
    data = render_json(report_from_dirs([root], intervals=False))
    sick_e = next(row for row in data["rows"] if row["task"] == "sick_e")
    assert sick_e["cells"]["sf"]["cost"]["encoder_passes"] == {
        "forward_backward": 2000.0,
        "forward": 1000.0,
    }


def test_block_arms_count_the_share_of_the_encoder_they_run(tmp_path, make_run):
    """Of 6 layers (cost.json's encoder_layers), top2 with a feature cache: a third of a
    fwd+bwd pass per epoch, and the four frozen layers forward (two thirds of a pass) in its
    first epoch only; top2 without a cache: those four every epoch; bottom2: its backward pass
    runs through every layer, a whole fwd+bwd pass. A block run whose layers are not known
    counts whole passes, as ft. (MRPC and STS-B ran no bottom2: an empty cell in the one score
    table of the encoder, not a missing one.)"""
    root = tmp_path / "runs"
    epochs = {"epoch_instances": [600, 600, 600], "epoch_encoder_trained": [True] * 3}
    cells = {
        "sick_e_bert_top2": ({}, 6),
        "mrpc_bert_top2": (None, 6),
        "sick_e_bert_bottom2": (None, 6),
        "sts_b_bert_top2": (None, None),
    }
    for cell, (cache, layers) in cells.items():
        run_dir = make_run(root / cell / "seed_1", 1, 0.8)
        if cache is not None:
            config = json.loads((run_dir / "config.json").read_text())
            config["model"] = {"embedder": {"feature_cache": cache}}
            (run_dir / "config.json").write_text(json.dumps(config))
        add_outputs(run_dir, cost(1000, seconds=(1.0, 1.0, 1.0), encoder_layers=layers, **epochs))
    rows = table_rows(
        render_markdown(report_from_dirs([root], intervals=False)), "BERT: costs (mean over runs)"
    )
    assert rows["SICK-E top2"][-2] == "600 fwd+bwd, 400 fwd"
    assert rows["MRPC top2"][-2] == "600 fwd+bwd, 1.2k fwd"
    assert rows["SICK-E bottom2"][-2] == "1.8k fwd+bwd, 0 fwd"
    assert rows["STS-B top2"][-2] == "1.8k fwd+bwd, 0 fwd"


def test_a_run_from_before_encoder_layers_reads_its_encoder_folder(tmp_path, make_run):
    """cost.json without encoder_layers: the layers come from the config.json of the encoder
    folder the run's config names."""
    from allennlp_tune.reporting.costs import encoder_layers
    from allennlp_tune.rundir import load_run

    encoder = tmp_path / "encoder"
    encoder.mkdir()
    (encoder / "config.json").write_text(json.dumps({"model_type": "bert", "num_hidden_layers": 4}))
    run_dir = make_run(tmp_path / "runs" / "sick_e_bert_top1" / "seed_1", 1, 0.8)
    config = json.loads((run_dir / "config.json").read_text())
    config["model"] = {"embedder": {"type": "tune_transformer", "model_name": str(encoder)}}
    (run_dir / "config.json").write_text(json.dumps(config))
    add_outputs(run_dir, cost(1000))
    assert encoder_layers(load_run(run_dir)) == 4
    (encoder / "config.json").unlink()
    assert encoder_layers(load_run(run_dir)) is None
