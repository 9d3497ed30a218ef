"""
What `allennlp probe` and `allennlp mi` share: their parser and its model and data arguments
(`LayerSubcommand`), checking them,
and loading each encoder (pretrained first, then fine-tuned) with a reader for its tokenizer.
"""

import argparse
import json
import logging
import os
from typing import Any, Dict, Iterator, List, Optional, Tuple

from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError

logger = logging.getLogger(__name__)


class LayerSubcommand(Subcommand):
    """
    A subcommand over every layer of a pretrained and/or fine-tuned transformer (`probe`, `mi`):
    its parser, with `description`, the model, data, feature and output arguments they share
    (a train file with `train_file`), then its own (`add_options`). Not registered itself.
    """

    description = ""
    train_file = False

    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        subparser = parser.add_parser(
            self.name,
            description=self.description,
            help=self.description,
            formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        )
        add_model_and_data_arguments(subparser, self.train_file)
        self.add_options(subparser)
        return subparser

    def add_options(self, subparser: argparse.ArgumentParser) -> None:
        """The subcommand's own arguments, and its function (`set_defaults(func=...)`)."""
        raise NotImplementedError


def add_model_and_data_arguments(subparser: argparse.ArgumentParser, train_file: bool) -> None:
    models = subparser.add_argument_group("models (give one or both)")
    models.add_argument(
        "--archive",
        help="a fine-tuned AllenNLP archive (model.tar.gz) whose model holds a transformer",
    )
    models.add_argument(
        "--model-name",
        help="a pretrained Hugging Face encoder: model name or folder",
    )
    data = subparser.add_argument_group("data")
    data.add_argument(
        "--reader",
        required=True,
        help="a dataset reader name (sst2, cola, mrpc, sts_b, ...) or its JSON config, e.g. "
        '\'{"type": "mrpc", "ids_file": "dev_ids.tsv"}\'; the tokenizer defaults to the '
        "encoder's wordpieces and pairs are encoded jointly",
    )
    if train_file:
        data.add_argument(
            "--dev-reader",
            help="a different reader for the dev file (default: --reader), e.g. MRPC's "
            "release train file read with ids_file/ids 'exclude' and GLUE's dev.tsv with 'mrpc'",
        )
        data.add_argument("--train-file", required=True, help="data the probes are fit on")
    data.add_argument(
        "--dev-file",
        required=True,
        help="data the probes are scored on" if train_file else "data the MI is measured on",
    )
    data.add_argument(
        "--max-instances",
        type=int,
        help="read at most this many instances from each file",
    )
    features = subparser.add_argument_group("features")
    features.add_argument(
        "--pooling",
        choices=["mean", "max", "first"],
        default="mean",
        help="how each layer's wordpiece vectors become one vector (first = [CLS])",
    )
    features.add_argument(
        "--layers",
        default="all",
        help="'all', or indices and ranges like '0,6,12' or '8-12' (0 = embeddings, -1 = top)",
    )
    features.add_argument("--batch-size", type=int, default=32, help="sentences per forward pass")
    features.add_argument(
        "--cuda-device", type=int, default=-1, help="GPU to run the encoder on (-1 = CPU)"
    )
    output = subparser.add_argument_group("output")
    output.add_argument("--output-dir", required=True, help="where the JSON and PNG files go")
    output.add_argument("--seed", type=int, default=0, help="seed of probes and estimators")


def check_arguments(args: argparse.Namespace) -> None:
    """Fails early, before any model is loaded, on inputs that cannot work."""
    if not args.archive and not args.model_name:
        raise ConfigurationError(
            "Give --model-name (a pretrained encoder), --archive (a fine-tuned model.tar.gz), "
            "or both to compare them."
        )
    if args.archive and not os.path.isfile(args.archive):
        raise ConfigurationError(
            f"--archive {args.archive} does not exist. Give the model.tar.gz that "
            "`allennlp train` wrote to its serialization directory."
        )
    for option in ("train_file", "dev_file"):
        path = getattr(args, option, None)
        if path is not None and not os.path.isfile(path):
            raise ConfigurationError(
                f"--{option.replace('_', '-')} {path} does not exist. Check the path (for the "
                "real data: TUNE_DATA_DIR or ../shared/data, e.g. sst-2/dev.tsv)."
            )
    if args.batch_size < 1:
        raise ConfigurationError(f"--batch-size must be at least 1, got {args.batch_size}.")
    if args.max_instances is not None and args.max_instances < 1:
        raise ConfigurationError(f"--max-instances must be at least 1, got {args.max_instances}.")
    reader_type(args.reader)  # a malformed --reader fails here
    if getattr(args, "dev_reader", None):
        reader_type(args.dev_reader)
    os.makedirs(args.output_dir, exist_ok=True)


def reader_type(reader: str) -> str:
    text = reader.strip()
    if not text.startswith("{"):
        return text
    try:
        return str(json.loads(text).get("type", ""))
    except json.JSONDecodeError as error:
        raise ConfigurationError(
            f"--reader is not valid JSON ({error}): {reader!r}. Give a reader name such as "
            'sst2, or a JSON object such as \'{"type": "mrpc"}\'.'
        ) from None


def encoders(args: argparse.Namespace) -> Iterator[Tuple[Any, Dict[str, Any], List[int]]]:
    """
    Yields `(encoder, readers, layers)` for the pretrained encoder and then the fine-tuned one,
    loading each only when it is needed; `readers` has a "train" and a "dev" reader, built for
    the encoder's tokenizer.
    """
    from allennlp_tune.analysis.features import (
        build_reader,
        load_archived_encoder,
        load_pretrained_encoder,
        parse_layers,
    )

    sources = []
    if args.model_name:
        sources.append(lambda: load_pretrained_encoder(args.model_name, args.cuda_device))
    if args.archive:
        sources.append(lambda: load_archived_encoder(args.archive, args.cuda_device))
    for load in sources:
        encoder = load()
        train_reader = build_reader(args.reader, encoder.tokenizer_name)
        dev_reader = train_reader
        if getattr(args, "dev_reader", None):
            dev_reader = build_reader(args.dev_reader, encoder.tokenizer_name)
        layers = parse_layers(args.layers, encoder.num_layers)
        yield encoder, {"train": train_reader, "dev": dev_reader}, layers
        del encoder, train_reader, dev_reader  # one model in memory at a time


def write_json(path: str, results: Dict[str, Any]) -> None:
    with open(path, "w") as output:
        json.dump(results, output, indent=2)
        output.write("\n")


def format_table(columns: Dict[str, Tuple[List[int], List[Optional[float]]]]) -> str:
    """A plain-text table, one row per layer: `columns` maps a header to `(layers, values)`."""
    all_layers = sorted({layer for layers, _ in columns.values() for layer in layers})
    rows = [["layer", *columns]]
    for layer in all_layers:
        row = [str(layer)]
        for layers, values in columns.values():
            value = values[layers.index(layer)] if layer in layers else None
            row.append("-" if value is None else f"{value:.4f}")
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.rjust(w) for cell, w in zip(row, widths)) for row in rows)
