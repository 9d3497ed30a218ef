import json
import sys

import pytest

from allennlp_tune.reporting.html_report import render_report_html, render_report_png
from allennlp_tune.reporting.render import render_markdown
from allennlp_tune.reporting.report import report_from_dirs
from allennlp_tune.reporting.tables import delta_mark
from allennlp_tune.rundir import load_run, parse_run_name


def failed_info(seed):
    return {
        "tool": "tune-grid",
        "task": "sick_e",
        "encoder": "bert",
        "mode": "ft",
        "seed": seed,
        "status": "failed",
        "error": "exit code 1: CUDA out of memory",
        "log": "tune_train.log",
    }


@pytest.fixture
def runs(tmp_path, make_run):
    root = tmp_path / "runs"
    for seed, value in [(1, 0.84), (2, 0.85), (3, 0.86)]:
        make_run(root / "sick_e_bert_fe" / f"seed_{seed}", seed, value)
    for seed, value in [(1, 0.87), (2, 0.88)]:
        make_run(root / "sick_e_bert_ft" / f"seed_{seed}", seed, value)
    # A failed run (tune-grid recorded it; allennlp never wrote config.json).
    failed = root / "sick_e_bert_ft" / "seed_3"
    failed.mkdir(parents=True)
    (failed / "tune_run.json").write_text(json.dumps(failed_info(3)))
    # A superseded attempt that tune-grid moved aside: ignored, but counted.
    make_run(root / "sick_e_bert_ft" / "seed_3.incomplete-20260101T000000", 3, 0.10)
    for seed, value in [(1, 0.80), (2, 0.82)]:
        make_run(root / "mrpc_bert_fe" / f"seed_{seed}", seed, value)
    make_run(root / "mrpc_bert_ft" / "seed_1", 1, 0.78)
    make_run(root / "mrpc_bert_ft" / "seed_2", 2, None)  # missing metric
    make_run(root / "sick_r_elmo_fe" / "seed_1", 1, 0.861, metric="+pearson")
    make_run(root / "sick_r_elmo_sf" / "seed_1", 1, 0.87, metric="+pearson")
    # Flat naming, seed from the name, no metrics.json: killed or still training.
    make_run(root / "sst2_elmo_fe_seed1", None, metrics=False)
    make_run(root / "conll2003_bert_ft_crf" / "seed_1", 1, 0.9123, metric="+f1-measure-overall")
    make_run(root / "my_experiment", 7, 0.5)
    return root


def table_rows(markdown, title):
    section = markdown.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    return {
        row.split(" | ")[0][2:]: [cell.strip() for cell in row.strip("| ").split(" | ")]
        for row in rows[1:]
    }


def test_report_cells_deltas_markers_and_problems(runs):
    report = report_from_dirs([runs])
    markdown = render_markdown(report)
    assert "15 runs found" in markdown and "1 superseded attempt(s)" in markdown

    bert = table_rows(markdown, "BERT")
    assert list(bert) == ["SICK-E", "MRPC"]  # paper order
    assert bert["SICK-E"] == [
        "SICK-E",
        "accuracy",
        "85.0 ± 1.0 (n=3)",
        "84.8",
        "87.5 ± 0.7 (n=2), failed (1/3)",
        "85.8",
        "+2.5 [ft]",
        "+1.0",
        "—",
    ]
    assert bert["MRPC"][2:8] == [
        "81.0 ± 1.4 (n=2)",
        "78.1",
        "78.0 (n=1), missing metric (1/2)",
        "84.8",
        "-3.0 [fe]",
        "+6.7 [ft]",
    ]

    elmo = table_rows(markdown, "ELMo")
    assert list(elmo) == ["SST-2", "SICK-R"]
    assert elmo["SST-2"][2] == "incomplete (1/1)"
    assert elmo["SICK-R"] == [
        "SICK-R",
        "Pearson",
        "86.1 (n=1)",
        "86.1",
        "—",
        "83.3",
        "—",
        "-2.8 [fe]",
        "87.0 (n=1)",
    ]

    others = table_rows(markdown, "Other runs (ablations, search trials, unrecognised names)")
    assert others["conll2003_bert_ft_crf"][1:] == ["span F1", "91.2 (n=1)"]
    assert others[str((runs / "my_experiment").resolve())][2] == "50.0 (n=1)"

    problems = markdown.split("## Runs without a score\n", 1)[1]
    assert "failed: " in problems and "CUDA out of memory" in problems
    assert str(runs.resolve() / "sick_e_bert_ft" / "seed_3" / "tune_train.log") in problems
    assert "missing metric: " in problems and "best_validation_accuracy" in problems
    assert "incomplete: " in problems and "sst2_elmo_fe_seed1" in problems


def test_html_and_png(runs, tmp_path):
    report = report_from_dirs([runs])
    page = render_report_html(report)
    assert '<td class="ft">+2.5 [ft]</td>' in page
    assert '<td class="fe">-3.0 [fe]</td>' in page
    assert "failed (1/3)" in page
    png = tmp_path / "table.png"
    render_report_png(report, png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_identification_and_rounding(tmp_path, make_run):
    assert parse_run_name("sts_b_elmo_ft_no_biattention_seed2")[0].variant == "no_biattention"
    name, seed = parse_run_name("sick_r_minilm_sf-seed_4")
    assert (name.task, name.encoder, name.mode, name.variant, seed) == (
        "sick_r",
        "minilm",
        "sf",
        None,
        4,
    )
    assert parse_run_name("seed_1") == (None, 1)
    # Rounded as displayed: +1.0 is not marked, +1.1 is.
    assert delta_mark(85.8 - 84.8) is None and delta_mark(1.06) == "ft"
    assert delta_mark(-1.04) is None and delta_mark(-1.06) == "fe"
    run = load_run(make_run(tmp_path / "sts_b_bert_ft" / "seed_1", 1, float("nan"), "+pearson"))
    assert run.status == "missing metric" and "nan" in run.detail


def test_cells_mixing_settings_or_repeating_a_seed_are_flagged(tmp_path, make_run):
    def run(root, seed, value, lr, data="/data/sick/train.txt", device=-1):
        run_dir = make_run(tmp_path / root / "sick_e_bert_ft" / f"seed_{seed}", seed, value)
        config = json.loads((run_dir / "config.json").read_text())
        config.update(numpy_seed=seed * 10, train_data_path=data)
        ids = data.replace("train.txt", "dev_ids.tsv")  # a reader's file, as MRPC's ids_file
        config["dataset_reader"] = {"type": "mrpc", "ids_file": ids, "ids": "exclude"}
        config["trainer"]["optimizer"] = {"type": "adamw", "lr": lr}
        config["trainer"]["cuda_device"] = device
        (run_dir / "config.json").write_text(json.dumps(config))

    # Seeds, the spelling of a data path and the device a seed ran on are not settings.
    run("grid", 1, 0.80, 2e-5, device=0)
    run("grid", 2, 0.82, 2e-5, data="../shared/data/sick/train.txt")
    clean = render_markdown(report_from_dirs([tmp_path / "grid"]))
    assert "| 81.0 ± 1.4 (n=2) |" in clean and "mix settings" not in clean
    assert "repeated seed" not in clean

    run("recipe", 1, 0.86, 1e-4)
    markdown = render_markdown(report_from_dirs([tmp_path / "grid", tmp_path / "recipe"]))
    assert "| 82.7 ± 3.1 (n=3), mixed settings, repeated seed |" in markdown
    mixed = markdown.split("## Cells that mix settings (config.json differs beyond the seed)\n")[1]
    assert mixed.split("\n")[1] == (
        "- BERT SICK-E ft (3 runs): trainer.optimizer.lr = 2e-05 (2), 0.0001 (1)"
    )
    repeated = markdown.split("## Cells with a repeated seed (each run counts in n)\n")[1]
    line = repeated.split("\n")[1]
    assert line.startswith("- BERT SICK-E ft: seed 1 in 2 runs: ")
    assert "grid/sick_e_bert_ft/seed_1" in line and "recipe/sick_e_bert_ft/seed_1" in line
    page = render_report_html(report_from_dirs([tmp_path / "grid", tmp_path / "recipe"]))
    assert "<li>BERT SICK-E ft (3 runs): trainer.optimizer.lr = 2e-05 (2), 0.0001 (1)</li>" in page


def test_missing_directory_and_empty(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such directory"):
        report_from_dirs([tmp_path / "nope"])
    assert "No runs found" in render_markdown(report_from_dirs([tmp_path]))


def test_subcommands_register_with_allennlp(runs, capsys, tmp_path, monkeypatch):
    from allennlp.commands import main

    import allennlp_tune.commands.tune_grid  # noqa: F401
    import allennlp_tune.commands.tune_report  # noqa: F401
    import allennlp_tune.commands.tune_search  # noqa: F401

    def allennlp(*argv):
        monkeypatch.setattr(sys, "argv", ["allennlp", *map(str, argv)])
        main()

    for name in ("tune-grid", "tune-search"):
        with pytest.raises(SystemExit):
            allennlp(name, "--help")
        assert "--results-dir" in capsys.readouterr().out
    page, data = tmp_path / "r.html", tmp_path / "r.json"
    allennlp("tune-report", runs, "--html", page, "--json", data)
    assert "| SICK-E | accuracy |" in capsys.readouterr().out and page.exists()
    report = json.loads(data.read_text())
    rows = {(row["encoder"], row["task"]): row for row in report["rows"]}
    sick_e = rows[("bert", "sick_e")]
    assert sick_e["delta"] == pytest.approx(2.5) and sick_e["delta_favours"] == "ft"
    assert sick_e["paper"] == {"fe": 84.8, "ft": 85.8}
    ft = sick_e["cells"]["ft"]
    assert (ft["mean"], ft["n"], ft["text"]) == (
        pytest.approx(87.5),
        2,
        "87.5 ± 0.7 (n=2), failed (1/3)",
    )
    assert sorted(run["status"] for run in ft["runs"]) == ["failed", "ok", "ok"]
    assert sick_e["cells"]["sf"] == {**sick_e["cells"]["sf"], "runs": [], "mean": None, "n": 0}
    assert [other["label"] for other in report["others"]][0] == "conll2003_bert_ft_crf"
    with pytest.raises(SystemExit) as exit_info:
        allennlp("tune-report", tmp_path / "nope")
    assert exit_info.value.code == 2
    assert "no such directory" in capsys.readouterr().err
