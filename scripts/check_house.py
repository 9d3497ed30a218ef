"""
What a layout change must not change, written to files so that two trees can be diffed:

- `configs.json`: every `training_config/*.jsonnet` rendered with the snapshot test's
  placeholder ext vars (`tests/configs/test_rendered_configs.py`);
- `report.md`, `report.json`, `report.html`: `allennlp tune-report` of a synthetic results
  folder (fe, ft, sf of one task with predictions, costs, curves and mix weights; an old
  two-mode grid without them), built at a fixed path so that the paths in the reports agree;
- `help/<subcommand>.txt`: the `--help` of every `allennlp` subcommand, at a fixed width.

It reaches the package only through the `allennlp` command line, so it runs unchanged on any
layout:

    PYTHONPATH=$PWD .venv/bin/python scripts/check_house.py /tmp/house_before
    PYTHONPATH=$PWD .venv/bin/python scripts/check_house.py /tmp/house_after
    diff -r /tmp/house_before /tmp/house_after
"""

import contextlib
import io
import json
import os
import shutil
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURE = Path("/tmp/house_fixture/runs")
EXAMPLES = 200
ACCURACY = {"fe": 0.70, "ft": 0.95, "sf": 0.72}
SECONDS = {"fe": [10.0, 12.0], "ft": [100.0, 110.0], "sf": [60.0, 70.0]}
TRAINABLE = {"fe": 13_000, "ft": 110_000_000, "sf": 110_000_000}
MIX = {1: [0.0, 1.0, 2.0], 2: [0.5, 0.5, -1.0]}
CURVES = {"fe": [0.60, 0.65, 0.70], "ft": [0.80, 0.93, 0.95], "sf": [0.50, 0.70, 0.72]}


def _write_json(path: Path, value) -> None:
    path.write_text(json.dumps(value))


def _run(run_dir: Path, seed: int, value: float, model=None) -> Path:
    run_dir.mkdir(parents=True)
    config = {"trainer": {"validation_metric": "+accuracy"}, "random_seed": seed}
    if model is not None:
        config["model"] = model
    _write_json(run_dir / "config.json", config)
    metrics = {"best_epoch": 1, "best_validation_loss": 0.5, "best_validation_accuracy": value}
    _write_json(run_dir / "metrics.json", metrics)
    return run_dir


def _predictions(run_dir: Path, accuracy: float, seed: int) -> None:
    wrong = int(round(EXAMPLES * (1 - accuracy))) + (seed - 1)
    lines = []
    for index in range(EXAMPLES):
        gold = "entailment" if index % 2 else "neutral"
        other = "neutral" if gold == "entailment" else "entailment"
        row = {"index": index, "gold": gold, "prediction": other if index < wrong else gold}
        lines.append(json.dumps(row))
    (run_dir / "dev_predictions.jsonl").write_text("\n".join(lines) + "\n")


def _weights(run_dir: Path, parameters) -> None:
    import torch

    prefix = "_text_field_embedder.token_embedder_tokens._scalar_mix."
    state = {
        f"{prefix}scalar_parameters.{i}": torch.tensor([value])
        for i, value in enumerate(parameters)
    }
    state[f"{prefix}gamma"] = torch.tensor([1.0])
    state["_classification_layer.weight"] = torch.zeros(3, 4)
    torch.save(state, run_dir / "weights.th")
    with tarfile.open(run_dir / "model.tar.gz", "w:gz") as archive:
        archive.add(run_dir / "weights.th", arcname="weights.th")
        archive.add(run_dir / "config.json", arcname="config.json")
    (run_dir / "weights.th").unlink()


def _cost(mode: str, seed: int):
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


def build_fixture(root: Path = FIXTURE) -> Path:
    """SICK-E fe / ft / sf with every output, and an old MRPC fe / ft grid with none."""
    if root.parent.exists():
        shutil.rmtree(root.parent)
    embedder = {"type": "tune_transformer", "layers": "all"}
    model = {"text_field_embedder": {"token_embedders": {"tokens": embedder}}}
    for mode, accuracy in ACCURACY.items():
        for seed in (1, 2):
            value = accuracy - (seed - 1) / EXAMPLES
            run_dir = _run(root / f"sick_e_bert_{mode}" / f"seed_{seed}", seed, value, model)
            _predictions(run_dir, accuracy, seed)
            _write_json(run_dir / "cost.json", _cost(mode, seed))
            for epoch, point in enumerate(CURVES[mode]):
                metrics = {"epoch": epoch, "validation_accuracy": point + seed / 1000}
                _write_json(run_dir / f"metrics_epoch_{epoch}.json", metrics)
            if mode == "fe":
                _weights(run_dir, MIX[seed])
    for mode, accuracy in (("fe", 0.80), ("ft", 0.84)):
        for seed in (1, 2):
            _run(root / f"mrpc_bert_{mode}" / f"seed_{seed}", seed, accuracy)
    return root


def _allennlp(argv) -> str:
    """`allennlp ARGV` in this process; its stdout (SystemExit, as from --help, is caught)."""
    from allennlp.commands import main

    out = io.StringIO()
    saved = sys.argv
    sys.argv = ["allennlp", *argv]
    try:
        with contextlib.redirect_stdout(out):
            try:
                main(prog="allennlp")
            except SystemExit:
                pass
    finally:
        sys.argv = saved
    return out.getvalue()


def write_configs(out: Path) -> None:
    from allennlp.common import Params

    sys.path.insert(0, str(REPO / "tests" / "configs"))
    from test_rendered_configs import PLACEHOLDER_EXT_VARS

    rendered = {
        f"training_config/{path.name}": Params.from_file(
            str(path), ext_vars=PLACEHOLDER_EXT_VARS
        ).as_dict(quiet=True)
        for path in sorted((REPO / "training_config").glob("*.jsonnet"))
    }
    text = json.dumps(rendered, indent=1, sort_keys=True)
    (out / "configs.json").write_text(text + "\n")


def write_reports(out: Path) -> None:
    root = build_fixture()
    written = root.parent / "out"  # a fixed path: the Markdown names the files it wrote
    written.mkdir()
    argv = ["tune-report", str(root), "--json", str(written / "report.json")]
    markdown = _allennlp([*argv, "--html", str(written / "report.html")])
    (out / "report.md").write_text(markdown)
    for name in ("report.json", "report.html"):
        shutil.copyfile(written / name, out / name)


def write_help(out: Path) -> None:
    from allennlp.commands import Subcommand

    help_dir = out / "help"
    help_dir.mkdir()
    (help_dir / "allennlp.txt").write_text(_allennlp(["--help"]))
    for name in sorted(Subcommand.list_available()):
        (help_dir / f"{name}.txt").write_text(_allennlp([name, "--help"]))


def main() -> None:
    os.environ["COLUMNS"] = "100"
    out = Path(sys.argv[1])
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    import allennlp_tune  # noqa: F401  (the plugin, as `allennlp` would import it)

    write_configs(out)
    write_reports(out)
    write_help(out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
