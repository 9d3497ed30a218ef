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
"""

import argparse
import logging
import os
from typing import Any, Dict

from allennlp.commands.subcommand import Subcommand

from allennlp_tune.commands.layer_analysis import (
    check_arguments,
    encoders,
    format_table,
    layer_subparser,
    reader_type,
    write_json,
)

logger = logging.getLogger(__name__)


@Subcommand.register("probe")
class Probe(Subcommand):
    """
    Registered as a `Subcommand` with name "probe". Run `allennlp probe --help` for the options.
    """

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        description = (
            "Fit one diagnostic classifier per layer of a pretrained and/or fine-tuned "
            "transformer and report its dev metric per layer (JSON and PNG)."
        )
        subparser = layer_subparser(parser, self.name, description, train_file=True)
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
        subparser.set_defaults(func=probe_from_args)
        return subparser


def probe_from_args(args: argparse.Namespace) -> Dict[str, Any]:
    """Runs the probes and writes `probe.json` and `probe.png`; returns the JSON content."""
    from allennlp_tune.analysis.features import extract_layer_features
    from allennlp_tune.analysis.plots import plot_layers
    from allennlp_tune.analysis.probing import (
        check_probe,
        default_metric,
        default_probe,
        probe_layers,
    )

    check_arguments(args)
    task = reader_type(args.reader)
    results: Dict[str, Any] = {
        "command": "probe",
        "reader": args.reader,
        "dev_reader": args.dev_reader or args.reader,
        "train_file": args.train_file,
        "dev_file": args.dev_file,
        "pooling": args.pooling,
        "max_instances": args.max_instances,
        "models": {},
    }
    for encoder, readers, layers in encoders(args):
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
        scores = probe_layers(train, dev, probe=probe, metric=metric, seed=args.seed)
        results.update(probe=probe, metric=metric)
        results["models"][encoder.kind] = {
            "source": encoder.description,
            "num_train": len(train),
            "num_dev": len(dev),
            "layers": layers,
            "scores": [scores[layer] for layer in layers],
        }

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
    )
    table = format_table({kind: (m["layers"], m["scores"]) for kind, m in models.items()})
    print(f"Dev {results['metric']} of a {results['probe']} probe per layer:\n{table}")
    print(f"Wrote {json_path} and {png_path}")
    return results
