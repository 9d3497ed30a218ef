"""The HTML report with figures and the PNG (html_report), from synthetic run folders."""

import html
import json
import math
import re
import tarfile

import pytest
import torch

from allennlp_tune.reporting.figures import forest_figure, forest_text
from allennlp_tune.reporting.html_report import render_report_html, render_report_png
from allennlp_tune.reporting.paired import compare_modes
from allennlp_tune.reporting.panel_data import (
    NO_COSTS,
    NO_CURVES,
    NO_FE,
    NO_PAIRED,
    NO_PREDICTIONS,
    NO_PROBE,
    curve_data,
    forest_data,
    frontier_data,
    mix_weights,
    pareto_front,
    probe_data,
    softmax,
)
from allennlp_tune.reporting.panels import task_panels
from allennlp_tune.reporting.render import render_json
from allennlp_tune.reporting.report import report_from_dirs

EXAMPLES = 200
ACCURACY = {"fe": 0.70, "ft": 0.95, "sf": 0.72}  # ft the clear winner
SECONDS = {"fe": [10.0, 12.0], "ft": [100.0, 110.0], "sf": [60.0, 70.0]}
TRAINABLE = {"fe": 13_000, "ft": 110_000_000, "sf": 110_000_000}
# Pre-softmax scalar-mix parameters of the fe seeds (three layers: embeddings, 1, 2).
MIX = {1: [0.0, 1.0, 2.0], 2: [0.5, 0.5, -1.0]}
CURVES = {"fe": [0.60, 0.65, 0.70], "ft": [0.80, 0.93, 0.95], "sf": [0.50, 0.70, 0.72]}
KEY = "sick_e_bert"


def write_predictions(run_dir, accuracy, seed):
    golds = ["entailment" if i % 2 else "neutral" for i in range(EXAMPLES)]
    wrong = int(round(EXAMPLES * (1 - accuracy))) + (seed - 1)
    lines = []
    for index, gold in enumerate(golds):
        other = "neutral" if gold == "entailment" else "entailment"
        lines.append(
            json.dumps(
                {"index": index, "gold": gold, "prediction": other if index < wrong else gold}
            )
        )
    (run_dir / "dev_predictions.jsonl").write_text("\n".join(lines) + "\n")


def write_weights(run_dir, parameters):
    """A model.tar.gz as `allennlp train` archives it: config.json and weights.th."""
    state = {
        f"_text_field_embedder.token_embedder_tokens._scalar_mix.scalar_parameters.{i}": (
            torch.tensor([value])
        )
        for i, value in enumerate(parameters)
    }
    state["_text_field_embedder.token_embedder_tokens._scalar_mix.gamma"] = torch.tensor([1.0])
    state["_classification_layer.weight"] = torch.zeros(3, 4)
    torch.save(state, run_dir / "weights.th")
    with tarfile.open(run_dir / "model.tar.gz", "w:gz") as archive:
        archive.add(run_dir / "weights.th", arcname="weights.th")
        archive.add(run_dir / "config.json", arcname="config.json")
    (run_dir / "weights.th").unlink()


def cost(mode, seed):
    seconds = [value + seed for value in SECONDS[mode]]
    return {
        "trainable_params": TRAINABLE[mode],
        "total_params": 110_013_000,
        "stored_params": 110_013_000,
        "epoch_seconds": seconds,
        "mean_epoch_seconds": sum(seconds) / len(seconds),
        "peak_rss_mb": 2000.0,
        "peak_gpu_mb": None,
        "epochs": len(seconds),
        "finished": True,
    }


@pytest.fixture
def grid(tmp_path, make_run):
    """SICK-E with fe, ft, sf (two seeds, every output) and an old MRPC grid with none."""
    root = tmp_path / "runs"
    for mode, accuracy in ACCURACY.items():
        for seed in (1, 2):
            run_dir = make_run(root / f"sick_e_bert_{mode}" / f"seed_{seed}", seed,
                               accuracy - (seed - 1) / EXAMPLES)  # fmt: skip
            config = json.loads((run_dir / "config.json").read_text())
            config["model"] = {"text_field_embedder": {"token_embedders": {"tokens": {
                "type": "tune_transformer", "layers": "all"}}}}  # fmt: skip
            (run_dir / "config.json").write_text(json.dumps(config))
            write_predictions(run_dir, accuracy, seed)
            (run_dir / "cost.json").write_text(json.dumps(cost(mode, seed)))
            for epoch, value in enumerate(CURVES[mode]):
                metrics = {"epoch": epoch, "validation_accuracy": value + seed / 1000}
                (run_dir / f"metrics_epoch_{epoch}.json").write_text(json.dumps(metrics))
            if mode == "fe":
                write_weights(run_dir, MIX[seed])
    for mode, accuracy in (("fe", 0.80), ("ft", 0.84)):
        for seed in (1, 2):
            make_run(root / f"mrpc_bert_{mode}" / f"seed_{seed}", seed, accuracy)
    return root


def with_paired(report_json):
    """Adds each row's `paired` entries (mode vs fe) where tune-report did not."""
    for row in report_json["rows"]:
        if "paired" in row:
            continue
        runs = {mode: [r["path"] for r in cell["runs"] if r.get("predictions")]
                for mode, cell in row["cells"].items() if cell["runs"]}  # fmt: skip
        if "fe" not in runs or not all(runs.values()):
            continue
        pairs = [(mode, "fe") for mode in runs if mode != "fe"]
        paths = {mode: [f"{path}/dev_predictions.jsonl" for path in p] for mode, p in runs.items()}
        row["paired"] = [
            r.as_dict() for r in compare_modes(paths, "accuracy", pairs, replicates=300)
        ]
    return report_json


@pytest.fixture
def report(grid):
    return report_from_dirs([grid])


@pytest.fixture
def report_json(report):
    return with_paired(json.loads(json.dumps(render_json(report))))


def row_of(report_json, task):
    return next(row for row in report_json["rows"] if row["task"] == task)


def test_the_page_refers_to_nothing_outside_itself(report):
    page = render_report_html(report)
    assert "http" not in page
    assert "src=" not in page
    assert "<script" not in page and "@import" not in page and "<link" not in page
    assert set(re.findall(r"url\((.)", page)) <= {"#"}  # only references inside the page
    assert set(re.findall(r'href="(.)', page)) <= {"#"}
    assert page.count("<svg") >= 5
    # Every id is unique, so the figures' clip paths never mix.
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids))


def test_forest_plot_values_are_the_reports_paired_results(report, report_json):
    row = row_of(report_json, "sick_e")
    points = forest_data(row)
    expected = sorted(row["paired"], key=lambda entry: ["ft", "sf"].index(entry["mode_a"]))
    assert [p["mode"] for p in points] == ["ft", "sf"]
    for point, entry in zip(points, expected):
        assert point["reference"] == entry["mode_b"] == "fe"
        for key in ("difference", "low", "high", "verdict", "examples", "seeds_a", "seeds_b"):
            assert point[key] == entry[key]
    assert points[0]["verdict"] == "ft" and points[0]["low"] > 0
    # What the figure draws: the marker at the difference, the bar from low to high.
    figure = forest_figure(points, KEY)
    axes = figure.axes[0]
    markers = {line.get_gid(): line for line in axes.get_lines() if line.get_gid()}
    for point in points:
        line = markers[f"g-forest-{KEY}-{point['mode']}"]
        assert line.get_xdata()[0] == pytest.approx(point["difference"])
    bars = [c for c in axes.collections if len(c.get_segments()) == 1]
    spans = sorted(tuple(sorted(s[0][:, 0])) for c in bars for s in [c.get_segments()])
    assert spans == sorted((p["low"], p["high"]) for p in points)
    # In the page: the marker group and the verdict written beside it.
    page = render_report_html(report)
    assert f'id="g-forest-{KEY}-ft"' in page
    verdict = re.search(rf'<g id="g-verdict-{KEY}-ft">(.*?)</g>', page, re.S).group(1)
    assert forest_text(points[0]).replace("-", "−")[-2:] in verdict.replace("-", "−")
    assert re.sub(r"<[^>]+>|\s", "", verdict).endswith("]ft")


def test_frontier_values_are_the_reports_scores_and_costs(report, report_json):
    row = row_of(report_json, "sick_e")
    points = {p["mode"]: p for p in frontier_data(row)}
    assert list(points) == ["fe", "ft", "sf"]
    for mode, point in points.items():
        cell = row["cells"][mode]
        assert point["score"] == cell["mean"] and point["std"] == cell["std"]
        assert point["params"] == cell["cost"]["trainable_params"] == TRAINABLE[mode]
        totals = [sum(run["cost"]["epoch_seconds"]) for run in cell["runs"]]
        assert point["seconds"] == pytest.approx(sum(totals) / len(totals))
        assert (point["seconds_low"], point["seconds_high"]) == (min(totals), max(totals))
        assert sorted(point["scores"]) == pytest.approx(
            sorted(run["value"] * 100 for run in cell["runs"])
        )
    # In time each mode is dearer and better than the one before; in parameters sf costs as
    # much as ft and scores less.
    assert pareto_front(list(points.values()), "seconds") == ["fe", "sf", "ft"]
    assert pareto_front(list(points.values()), "params") == ["fe", "ft"]
    assert pareto_front(list(points.values()), "params", higher_is_better=False) == ["fe"]
    page = render_report_html(report)
    for mode in points:
        assert f'id="g-frontier-seconds-{KEY}-{mode}"' in page
        assert f'id="g-frontier-params-{KEY}-{mode}"' in page
    assert "Pareto frontier (fe, sf, ft)" in page


def test_learning_curves_are_the_per_epoch_metrics(report, report_json):
    curves = curve_data(row_of(report_json, "sick_e"))
    assert sorted(curves) == ["fe", "ft", "sf"]
    for mode, runs in curves.items():
        assert sorted(run["seed"] for run in runs) == [1, 2]
        for run in runs:
            assert run["epochs"] == [0, 1, 2]
            expected = [(value + run["seed"] / 1000) * 100 for value in CURVES[mode]]
            assert run["values"] == pytest.approx(expected)
    page = render_report_html(report)
    assert f'id="g-curve-{KEY}-ft-2"' in page


def test_mix_weights_are_softmaxed_and_averaged_over_seeds(report, report_json, tmp_path):
    mix, why = mix_weights(row_of(report_json, "sick_e"))
    assert why == ""
    assert mix["layers"] == [0, 1, 2]
    per_seed = [softmax(MIX[1]), softmax(MIX[2])]
    for got, expected in zip(sorted(mix["per_run"]), sorted(per_seed)):
        assert got == pytest.approx(expected)
    assert mix["weights"] == pytest.approx([(a + b) / 2 for a, b in zip(*per_seed)])
    assert sum(mix["weights"]) == pytest.approx(1.0)
    assert softmax([0.0, math.log(3.0)]) == pytest.approx([0.25, 0.75])
    # Beside it, the probe of the same task when its output folder is given.
    probe_dir = tmp_path / "probe_sick_e"
    probe_dir.mkdir()
    models = {"pretrained": {"layers": [0, 1, 2], "scores": [0.5, 0.6, 0.7]}}
    probe = {"metric": "accuracy", "probe": "logistic", "models": models}
    (probe_dir / "probe.json").write_text(json.dumps(probe))
    assert probe_data(probe_dir)[0]["models"] == probe["models"]
    without = render_report_html(report)
    assert html.escape(NO_PROBE) in without
    page = render_report_html(report, probe_dirs={"sick_e": probe_dir})
    assert f'id="g-mix-{KEY}-2"' in page and f'id="g-probe-{KEY}-pretrained"' in page
    assert "Scalar-mix weights (fe) and per-layer probe" in page
    section = page.split('id="task-sick_e_bert"')[1].split('id="task-')[0]
    assert html.escape(NO_PROBE) not in section
    titles = [panel.title for panel in task_panels(row_of(report_json, "sick_e"), {
        "sick_e_bert": probe_dir})]  # fmt: skip
    assert titles == [
        "Difference to fe, paired 95% interval",
        "Score versus training time",
        "Score versus trainable parameters",
        "Learning curves",
        "Scalar-mix weights (fe) and per-layer probe",
    ]


def test_old_runs_render_with_the_missing_panels_named(report, report_json):
    row = row_of(report_json, "mrpc")
    assert "paired" not in row or not forest_data(row)
    missing = {panel.title: panel.missing for panel in task_panels(row) if panel.draw is None}
    assert missing["Difference to fe, paired 95% interval"].startswith(NO_PREDICTIONS)
    assert "fe 0/2, ft 0/2" in missing["Difference to fe, paired 95% interval"]
    assert missing["Score versus training time"] == NO_COSTS
    assert missing["Score versus trainable parameters"] == NO_COSTS
    assert missing["Learning curves"] == NO_CURVES
    assert "no model.tar.gz" in missing["Scalar-mix weights (fe)"]
    assert missing["Per-layer probe"] == NO_PROBE
    page = render_report_html(report)
    section = page.split('id="task-mrpc_bert"')[1].split('id="task-')[0]
    for reason in missing.values():
        assert html.escape(reason) in section
    assert section.count('class="missing"') == 6
    # A task without fe runs says so for the mix.
    row = json.loads(json.dumps(row))
    del row["cells"]["fe"]
    assert [p.missing for p in task_panels(row) if p.title.startswith("Scalar")] == [NO_FE]


def test_a_json_without_paired_or_costs_keys_still_renders(report_json):
    """Rows from before the verdicts and costs (no `paired`, `cost` keys) still get panels."""
    for row in report_json["rows"]:
        row.pop("paired", None)
        row.pop("overlap", None)
        for cell in row["cells"].values():
            cell.pop("cost", None)
    panels = [panel for row in report_json["rows"] for panel in task_panels(row)]
    missing = [panel.missing or "" for panel in panels]
    assert sum(reason.startswith(NO_PREDICTIONS) for reason in missing) == 1  # MRPC
    assert sum(reason.startswith(NO_PAIRED) for reason in missing) == 1  # SICK-E
    assert "Score versus training time" in [panel.title for panel in panels if panel.draw]


def test_the_page_has_the_reports_tables_and_notes(report):
    page = render_report_html(report)
    for table in report.tables():
        assert f"<h2>{table.title}</h2>" in page.replace("&#x27;", "'")
    for title, _ in report.notes():
        assert title in page
    assert "http" not in page and "src=" not in page
    assert "<h2>BERT</h2>" in page and "+25.0 [" in page  # the verdict column


def test_broken_archive_is_named_not_fatal(report, report_json):
    row = row_of(report_json, "sick_e")
    for run in row["cells"]["fe"]["runs"]:
        with open(f"{run['path']}/model.tar.gz", "wb") as handle:
            handle.write(b"not a tar file")
    mix, why = mix_weights(row)
    assert mix is None and "cannot read the weights" in why
    assert "cannot read the weights" in render_report_html(report)


def test_png_is_written_with_a_sane_aspect_ratio(report, tmp_path):
    from PIL import Image

    from allennlp_tune.reporting.report import build_report

    path = tmp_path / "report.png"
    render_report_png(report, path)
    with Image.open(path) as image:
        width, height = image.size
    assert width > 1000 and 0.3 < height / width < 3
    render_report_png(build_report([]), tmp_path / "empty.png")
    assert (tmp_path / "empty.png").is_file()


@pytest.mark.parametrize(
    "seconds, expected",
    [
        # Within one decade (SICK-R's runs): matplotlib's default labels every minor tick
        # (2x10^2, 3x10^2, 4x10^2, 6x10^2) and they overlap; ours label 1-2-5 only.
        ((240.0, 330.0, 600.0), ["100", "200", "500", "1k"]),
        # Over more than 2.5 decades (trainable parameters: BitFit to full fine-tuning), 1-2-5
        # would be 11 labels in a narrow panel: the powers of ten only.
        ((26_000.0, 75_000.0, 4_500_000.0, 22_600_000.0), ["100k", "1M", "10M"]),
    ],
)  # fmt: skip
def test_frontier_log_axis_labels_are_short_and_only_on_1_2_5(seconds, expected):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from allennlp_tune.reporting.figures import draw_frontier

    points = [
        {"mode": f"m{i}", "score": 80.0 + i, "std": 0.0, "seconds": value}
        for i, value in enumerate(seconds)
    ]
    figure = Figure()
    axes = figure.add_subplot()
    draw_frontier(axes, points, "seconds")
    FigureCanvasAgg(figure).draw()
    low, high = axes.get_xlim()
    major = [
        label.get_text()
        for tick, label in zip(axes.get_xticks(), axes.get_xticklabels())
        if low <= tick <= high
    ]
    assert major == expected
    assert all(label.get_text() == "" for label in axes.xaxis.get_ticklabels(minor=True))


def test_the_command_takes_probe_dirs_and_refuses_a_folder_without_probe_json(
    grid, tmp_path, monkeypatch, capsys
):
    import sys

    from allennlp.commands import main

    import allennlp_tune.commands.tune_report  # noqa: F401

    probe_dir = tmp_path / "analysis" / "sick_e"
    probe_dir.mkdir(parents=True)
    models = {"pretrained": {"layers": [0, 1, 2], "scores": [0.5, 0.6, 0.7]}}
    (probe_dir / "probe.json").write_text(
        json.dumps({"metric": "accuracy", "probe": "logistic", "models": models})
    )
    out = tmp_path / "report.html"
    argv = ["allennlp", "tune-report", str(grid), "--html", str(out), "--no-intervals"]
    monkeypatch.setattr(sys, "argv", argv + ["--probe-dir", f"sick_e={probe_dir}"])
    main()
    section = out.read_text().split(f'id="task-{KEY}"')[1].split('id="task-')[0]
    assert f'id="g-probe-{KEY}-pretrained"' in section
    assert html.escape(NO_PROBE) not in section
    # Without the option the panel names the option.
    monkeypatch.setattr(sys, "argv", argv)
    main()
    assert "--probe-dir TASK=DIR" in out.read_text()
    # A folder without probe.json, or no TASK=, ends the command with the fix.
    for bad in (f"sick_e={tmp_path}", str(probe_dir)):
        monkeypatch.setattr(sys, "argv", argv + ["--probe-dir", bad])
        with pytest.raises(SystemExit):
            main()
        error = capsys.readouterr().err
        assert "probe.json" in error or "TASK=DIR" in error
