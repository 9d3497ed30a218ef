"""
`allennlp mi`: mutual information between every layer's pooled vectors and the labels, with the
EDGE estimator, and a random-label control per layer, like Figure 2 of Peters, Ruder & Smith
(2019).

```
allennlp mi --model-name bert-base-uncased --archive runs/sst2_bert_ft/model.tar.gz \\
    --reader sst2 --dev-file $TUNE_DATA_DIR/sst-2/dev.tsv --output-dir analysis/sst2
```

Features are extracted as for `allennlp probe` (same model, data and feature options), on the
dev file as in the paper. The control estimates the MI with the same vectors and a random
permutation of the labels: it should be about 0 and measures the estimator's bias. Real-valued
scores (STS-B) are binned into `--score-bins` equal-frequency bins first. Writes `mi.json` and
`mi.png` (bits; layer on x, solid lines for the labels, dashed for the control).
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


@Subcommand.register("mi")
class MutualInformation(Subcommand):
    """
    Registered as a `Subcommand` with name "mi". Run `allennlp mi --help` for the options.
    """

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        description = (
            "Estimate the mutual information between every layer of a pretrained and/or "
            "fine-tuned transformer and the labels with EDGE, with a random-label control."
        )
        subparser = layer_subparser(parser, self.name, description, train_file=False)
        estimator = subparser.add_argument_group("EDGE estimator")
        estimator.add_argument(
            "--ensemble",
            choices=["median", "weighted", "mean"],
            default="median",
            help="how the base estimates at different hash resolutions are combined",
        )
        estimator.add_argument(
            "--num-estimators", type=int, default=10, help="base estimates in the ensemble"
        )
        estimator.add_argument(
            "--score-bins",
            type=int,
            default=5,
            help="equal-frequency bins for real-valued labels (STS-B scores)",
        )
        subparser.set_defaults(func=mi_from_args)
        return subparser


def mi_from_args(args: argparse.Namespace) -> Dict[str, Any]:
    """Estimates MI per layer and writes `mi.json` and `mi.png`; returns the JSON content."""
    import numpy as np
    from allennlp.common.checks import ConfigurationError

    from allennlp_tune.analysis.edge import discretise_scores, edge_mutual_information
    from allennlp_tune.analysis.features import extract_layer_features
    from allennlp_tune.analysis.plots import plot_layers

    check_arguments(args)
    if args.num_estimators < 1:
        raise ConfigurationError(f"--num-estimators must be at least 1, got {args.num_estimators}.")
    if args.score_bins < 2:
        raise ConfigurationError(f"--score-bins must be at least 2, got {args.score_bins}.")
    task = reader_type(args.reader)
    results: Dict[str, Any] = {
        "command": "mi",
        "reader": args.reader,
        "dev_file": args.dev_file,
        "pooling": args.pooling,
        "max_instances": args.max_instances,
        "units": "bits",
        "estimator": {
            "name": "EDGE",
            "ensemble": args.ensemble,
            "num_estimators": args.num_estimators,
            "seed": args.seed,
        },
        "models": {},
    }
    for encoder, readers, layers in encoders(args):
        dev = extract_layer_features(
            encoder,
            readers["dev"],
            args.dev_file,
            layers=layers,
            pooling=args.pooling,
            batch_size=args.batch_size,
            max_instances=args.max_instances,
        )
        if dev.regression:
            labels = discretise_scores(dev.labels, args.score_bins)
            results["labels"] = (
                f"real-valued scores binned into {args.score_bins} equal-frequency bins"
            )
        else:
            labels = np.asarray(dev.labels)
            results["labels"] = f"{len(set(dev.labels))} classes"
        random_labels = np.random.default_rng(args.seed).permutation(labels)
        options = {
            "ensemble": args.ensemble,
            "num_estimators": args.num_estimators,
            "seed": args.seed,
        }
        mi, control = [], []
        for layer in layers:
            mi.append(edge_mutual_information(dev.vectors[layer], labels, **options))
            control.append(edge_mutual_information(dev.vectors[layer], random_labels, **options))
        results["models"][encoder.kind] = {
            "source": encoder.description,
            "num_dev": len(dev),
            "layers": layers,
            "mi": mi,
            "random_label_mi": control,
        }

    models = results["models"]
    json_path = os.path.join(args.output_dir, "mi.json")
    png_path = os.path.join(args.output_dir, "mi.png")
    write_json(json_path, results)
    plot_layers(
        {kind: {"layers": m["layers"], "values": m["mi"]} for kind, m in models.items()},
        png_path,
        ylabel="I(H; Y) (bits)",
        title=f"EDGE mutual information per layer: {task}, {args.pooling} pooling",
        controls={
            kind: {"layers": m["layers"], "values": m["random_label_mi"]}
            for kind, m in models.items()
        },
        y_from_zero=True,
    )
    columns = {}
    for kind, m in models.items():
        columns[f"{kind} MI"] = (m["layers"], m["mi"])
        columns[f"{kind} control"] = (m["layers"], m["random_label_mi"])
    table = format_table(columns)
    print(f"EDGE mutual information (bits) per layer:\n{table}")
    print(f"Wrote {json_path} and {png_path}")
    return results
