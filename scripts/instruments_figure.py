"""One figure per task with the instruments of issue 17 side by side, pretrained vs fine-tuned.

    python scripts/instruments_figure.py PROBE_JSON [MI_JSON ...] --out PNG --title TEXT

`PROBE_JSON` is the `probe.json` of `allennlp probe` (with `--control` and `--mdl` for the
control task and MDL panels); each `MI_JSON` is an `mi.json` of `allennlp mi` on the same task
(e.g. one with `--estimator edge`, the paper's plain EDGE, and one with the default
`edge_projected`), labelled by its "estimator" field. Panels: mutual information in bits (EDGE
estimates, random-label controls dashed, the bounds H(Y) - CE), probe score with control task and
selectivity, MDL compression; a missing input gets a panel that names the flag producing it.
"""

import argparse
import json
import sys
from pathlib import Path
from typing import Any, List, Optional

REPO_ROOT = Path(__file__).resolve().parents[1]


def load(path: str, command: str, parser: argparse.ArgumentParser) -> Any:
    """The JSON in `path`, checked to be `allennlp {command}`'s output; a usage error if not."""
    from allennlp_tune.analysis.plots import check_instrument_results

    file = Path(path)
    if not file.is_file():
        parser.error(f"{path}: no such file (expected the {command}.json of `allennlp {command}`)")
    try:
        results = json.loads(file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        parser.error(f"{path} is not JSON ({error}); expected the {command}.json")
    try:
        check_instrument_results(results, path, command)
    except ValueError as error:
        parser.error(str(error))
    return results


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        description="Plot EDGE, the probe bound, control selectivity and MDL per layer."
    )
    parser.add_argument("probe_json", metavar="PROBE_JSON", help="probe.json of `allennlp probe`")
    parser.add_argument(
        "mi_json", metavar="MI_JSON", nargs="*", help="mi.json files of `allennlp mi` (0 to 2)"
    )
    parser.add_argument("--out", required=True, metavar="PNG", help="the PNG to write")
    parser.add_argument("--title", required=True, metavar="TEXT", help="the figure's title")
    args = parser.parse_args(argv)
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    from allennlp_tune.analysis.plots import check_same_task, plot_instruments

    probe = load(args.probe_json, "probe", parser)
    mi_results = [load(path, "mi", parser) for path in args.mi_json]
    for path, mi in zip(args.mi_json, mi_results):
        try:
            check_same_task(probe, mi, path)
        except ValueError as error:
            parser.error(str(error))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    try:
        drawn = plot_instruments(probe, mi_results, args.out, title=args.title)
    except ValueError as error:
        parser.error(str(error))
    for name, panel in drawn["panels"].items():
        for message in panel["messages"]:
            print(f"{name} panel: {message}")
    print(f"Wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
