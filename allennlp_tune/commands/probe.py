"""
`allennlp probe`: diagnostic classifiers on every layer of a pretrained and/or fine-tuned
transformer, like Figure 1 of Peters, Ruder & Smith (2019).

```
allennlp probe --model-name bert-base-uncased --archive runs/sst2_bert_ft/model.tar.gz \\
    --reader sst2 --train-file $TUNE_DATA_DIR/sst-2/train.tsv \\
    --dev-file $TUNE_DATA_DIR/sst-2/dev.tsv --output-dir analysis/sst2
```

For each model, the pooled vector of every layer (`--pooling mean`, the paper's choice) is
extracted once for the train and dev files, without gradients; one scikit-learn probe per layer
is fit on train (`--probe`: logistic for labels, linear for scores, or ridge) and scored on dev
(`--metric`: accuracy, MCC for CoLA, Pearson for scores). Writes `probe.json` and `probe.png`
(layer on x, one line per model) to `--output-dir`.

What the probe says in bits, per layer, in the JSON and the printed table:

- always, for classifier probes with probabilities (logistic): the probe's dev cross-entropy
  `CE`, the cross-entropy `CE (T)` at a softmax temperature fit by 3-fold cross-validation on
  train (the C = 1 probe is over-confident in 384 dimensions), and the variational lower bound
  `I(layer; Y) >= H(Y) - CE (T)` (bits; `H(Y)` from the dev labels, the distribution CE is
  averaged over). An MI estimate below it is an underestimate.
- `--control`: a control task (Hewitt & Liang 2019): every sentence (pair) type, by its
  wordpiece ids, gets a label drawn at random (seed `--seed`) from the train labels; the same
  probe is fit on it, and `selectivity` is the task metric minus the control metric. Dashed
  lines in `probe.png`. It fits a second probe per layer, hence the flag.
- `--mdl`: the online code of Voita & Titov (2020) with the logistic probe on the train
  vectors (blocks at 0.1%, 0.2%, 0.4%, ..., 50%, 100% of train): description length in bits and
  compression against the uniform code (`mdl.png`). Class labels only.
"""

import argparse
import logging
import os
from typing import Any, Dict, List

from allennlp.commands.subcommand import Subcommand

from allennlp_tune.commands.layer_analysis import (
    LayerSubcommand,
    check_arguments,
    encoders,
    format_table,
    reader_type,
    write_json,
)

logger = logging.getLogger(__name__)


@Subcommand.register("probe")
class Probe(LayerSubcommand):
    """
    Registered as a `Subcommand` with name "probe". Run `allennlp probe --help` for the options.
    """

    description = (
        "Fit one diagnostic classifier per layer of a pretrained and/or fine-tuned "
        "transformer and report its dev metric per layer (JSON and PNG)."
    )
    train_file = True

    def add_options(self, subparser: argparse.ArgumentParser) -> None:
        probes = subparser.add_argument_group("probe")
        probes.add_argument(
            "--probe",
            choices=["auto", "logistic", "linear", "ridge"],
            default="auto",
            help="auto = logistic regression for labels, linear regression for scores",
        )
        probes.add_argument(
            "--metric",
            choices=["auto", "accuracy", "mcc", "pearson"],
            default="auto",
            help="auto = MCC for cola, Pearson for scores, accuracy otherwise",
        )
        probes.add_argument(
            "--control",
            action="store_true",
            help="also fit each probe on a control task (random label per sentence type) and "
            "report its metric and the selectivity (task minus control)",
        )
        probes.add_argument(
            "--mdl",
            action="store_true",
            help="also report the online-code description length of the train labels and its "
            "compression against the uniform code, per layer (writes mdl.png)",
        )
        subparser.set_defaults(func=probe_from_args)


def probe_from_args(args: argparse.Namespace) -> Dict[str, Any]:
    """Runs the probes and writes `probe.json` and `probe.png`; returns the JSON content."""
    check_arguments(args)
    task = reader_type(args.reader)
    control, mdl = getattr(args, "control", False), getattr(args, "mdl", False)
    results = _probe_header(args, control, mdl)
    for encoder, readers, layers in encoders(args):
        probe, metric, model = _probe_model(args, task, encoder, readers, layers, control, mdl)
        results.update(probe=probe, metric=metric)
        results["models"][encoder.kind] = model
    written = _write_probe_outputs(args, task, results, control, mdl)
    table = format_table(_probe_columns(results, control, mdl))
    print(
        f"Dev {results['metric']} of a {results['probe']} probe per layer; CE, CE at the "
        f"temperature fit on train (T) and the bound H(Y) - CE (T), in bits:\n{table}"
    )
    print(f"Wrote {' and '.join(written)}")
    return results


def _probe_header(args: argparse.Namespace, control: bool, mdl: bool) -> Dict[str, Any]:
    """What `probe.json` says about the run before any model's results."""
    results: Dict[str, Any] = {
        "command": "probe",
        "reader": args.reader,
        "dev_reader": args.dev_reader or args.reader,
        "train_file": args.train_file,
        "dev_file": args.dev_file,
        "pooling": args.pooling,
        "max_instances": args.max_instances,
        "units": "bits",
        "bound": "H(Y) - CE on dev of the probe at a softmax temperature fit by 3-fold "
        "cross-validation on train; H(Y) is the entropy of the dev labels",
        "models": {},
    }
    if control:
        results["control_task"] = (
            "a random train label per sentence type (wordpiece ids), seed "
            f"{args.seed}; selectivity = task - control"
        )
    if mdl:
        results["mdl_code"] = "online code (Voita & Titov 2020), logistic probe, bits"
    return results


def _probe_model(args, task: str, encoder, readers, layers, control: bool, mdl: bool):
    """One encoder's probes on every layer: `(probe, metric, its entry of "models")`."""
    from allennlp_tune.analysis.features import extract_layer_features
    from allennlp_tune.analysis.probing import (
        check_probe,
        control_labels,
        default_metric,
        default_probe,
        probe_layer_report,
    )

    options = {"layers": layers, "pooling": args.pooling, "batch_size": args.batch_size}
    train = extract_layer_features(
        encoder, readers["train"], args.train_file, max_instances=args.max_instances, **options
    )
    probe = default_probe(train.regression) if args.probe == "auto" else args.probe
    metric = default_metric(task, train.regression) if args.metric == "auto" else args.metric
    check_probe(probe, metric, train.regression)
    dev = extract_layer_features(
        encoder, readers["dev"], args.dev_file, max_instances=args.max_instances, **options
    )
    control_data = None
    if control:
        control_data = control_labels(train.types, train.labels, dev.types, seed=args.seed)
    reports = {
        layer: probe_layer_report(
            train.vectors[layer],
            train.labels,
            dev.vectors[layer],
            dev.labels,
            probe=probe,
            metric=metric,
            regression=train.regression,
            seed=args.seed,
            control=control_data,
            mdl=mdl,
        )
        for layer in layers
    }
    model: Dict[str, Any] = {
        "source": encoder.description,
        "num_train": len(train),
        "num_dev": len(dev),
        "layers": layers,
    }
    for key in ("score", "cross_entropy", "calibrated_cross_entropy", "temperature", "bound"):
        model[f"{key}s" if key == "score" else key] = [reports[i][key] for i in layers]
    model["label_entropy"] = reports[layers[0]]["entropy"]
    if control:
        model["control_scores"] = [reports[i]["control_score"] for i in layers]
        model["selectivity"] = [reports[i]["selectivity"] for i in layers]
    if mdl:
        codes = [reports[i]["mdl"] for i in layers]
        model["mdl"] = {
            "codelength": [None if code is None else code["codelength"] for code in codes],
            "compression": [None if code is None else code["compression"] for code in codes],
            "uniform_codelength": None if codes[0] is None else codes[0]["uniform_codelength"],
            "block_ends": None if codes[0] is None else codes[0]["block_ends"],
        }
    return probe, metric, model


def _write_probe_outputs(
    args: argparse.Namespace, task: str, results: Dict[str, Any], control: bool, mdl: bool
) -> List[str]:
    """Writes `probe.json`, `probe.png` and with `--mdl` `mdl.png`; returns their paths."""
    from allennlp_tune.analysis.plots import plot_layers

    models = results["models"]
    json_path = os.path.join(args.output_dir, "probe.json")
    png_path = os.path.join(args.output_dir, "probe.png")
    write_json(json_path, results)
    metric_name = {"accuracy": "accuracy", "mcc": "Matthews corr.", "pearson": "Pearson r"}
    plot_layers(
        {kind: {"layers": m["layers"], "values": m["scores"]} for kind, m in models.items()},
        png_path,
        ylabel=f"dev {metric_name[results['metric']]}",
        title=f"{results['probe']} probe per layer: {task}, {args.pooling} pooling",
        controls={
            kind: {"layers": m["layers"], "values": m["control_scores"]}
            for kind, m in models.items()
        }
        if control
        else None,
        control_label="control task",
    )
    written = [json_path, png_path]
    if mdl:
        mdl_path = os.path.join(args.output_dir, "mdl.png")
        plot_layers(
            {
                kind: {"layers": m["layers"], "values": m["mdl"]["compression"]}
                for kind, m in models.items()
            },
            mdl_path,
            ylabel="compression (uniform code / online code)",
            title=f"MDL probe (online code) per layer: {task}, {args.pooling} pooling",
        )
        written.append(mdl_path)
    return written


def _probe_columns(results: Dict[str, Any], control: bool, mdl: bool) -> Dict[str, Any]:
    """The printed table's columns, per model: score, CE, bound, control, MDL."""
    columns = {}
    for kind, m in results["models"].items():
        columns[f"{kind} {results['metric']}"] = (m["layers"], m["scores"])
        if any(value is not None for value in m["bound"]):
            columns[f"{kind} CE"] = (m["layers"], m["cross_entropy"])
            columns[f"{kind} CE (T)"] = (m["layers"], m["calibrated_cross_entropy"])
            columns[f"{kind} bound"] = (m["layers"], m["bound"])
        if control:
            columns[f"{kind} control"] = (m["layers"], m["control_scores"])
            columns[f"{kind} selectivity"] = (m["layers"], m["selectivity"])
        if mdl:
            columns[f"{kind} MDL (kbit)"] = (
                m["layers"],
                [None if v is None else v / 1000 for v in m["mdl"]["codelength"]],
            )
            columns[f"{kind} compression"] = (m["layers"], m["mdl"]["compression"])
    return columns
