"""
`allennlp tune-export ARCHIVE DIR [--head-only]`: a trained run of the plugin as files that
need no AllenNLP.

- fe, ft, sf, bitfit: `DIR/encoder/`, a transformers folder (`AutoModel.from_pretrained` and
  `AutoTokenizer.from_pretrained` load it) with the run's encoder weights (fe: the pretrained
  ones, unchanged, which the card says);
- lora: `DIR/adapter/`, a peft adapter folder
  (`PeftModel.from_pretrained(AutoModel.from_pretrained(base), DIR/adapter)`), whose
  `base_model_name_or_path` is the config's `model_name`;
- every mode: `DIR/scalar_mix.json` (when layers are mixed), `DIR/head.safetensors` with
  `DIR/head.json` (model type and config, tensor shapes, label vocabulary), and the model card
  `DIR/README.md` (task, mode, encoder, dev score from `metrics.json`, cost from `cost.json`).

DIR must be new or empty. An ELMo run has no transformers format: it exports with
`--head-only` (head, mix and card). See `allennlp_tune.export`.
"""

import argparse
import sys

from allennlp.commands.subcommand import Subcommand
from allennlp.common.checks import ConfigurationError

DESCRIPTION = (
    "Export a trained run (model.tar.gz) for use without AllenNLP: the encoder as a "
    "transformers folder (fe, ft, sf, bitfit) or a peft LoRA adapter (lora), the scalar-mix "
    "weights, the task head and a model card."
)


def export_main(args: argparse.Namespace) -> None:
    from allennlp_tune.export import export_archive

    try:
        result = export_archive(args.archive, args.dir, head_only=args.head_only)
    except ConfigurationError as error:
        print(f"allennlp tune-export: {error}", file=sys.stderr)
        sys.exit(2)
    written = sorted(path.name for path in result.directory.iterdir())
    print(f"tune-export: {result.mode} run exported to {result.directory}: {', '.join(written)}")


@Subcommand.register("tune-export")
class TuneExport(Subcommand):
    def add_subparser(self, parser: argparse._SubParsersAction) -> argparse.ArgumentParser:
        subparser = parser.add_parser(self.name, description=DESCRIPTION, help=DESCRIPTION)
        subparser.add_argument(
            "archive",
            metavar="ARCHIVE",
            help="the run's model.tar.gz (or its serialization folder)",
        )
        subparser.add_argument(
            "dir", metavar="DIR", help="the export folder: created, or an empty one"
        )
        subparser.add_argument(
            "--head-only",
            action="store_true",
            help="export the head, the scalar mix and the card without the encoder (ELMo runs)",
        )
        subparser.set_defaults(func=export_main)
        return subparser
