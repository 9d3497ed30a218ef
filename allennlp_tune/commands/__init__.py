"""Subcommands added to `allennlp`: `probe` (per-layer diagnostic classifiers), `mi` (EDGE
mutual information per layer), `tune-report`, `tune-grid`, `tune-compare`, `tune-search`,
`tune-test`, `tune-data` and `tune-layers` (the layer signal). Importing this package registers
them; their heavy dependencies (scikit-learn, matplotlib, Optuna) load only when a command runs."""

from allennlp_tune.commands.mi import MutualInformation
from allennlp_tune.commands.probe import Probe
from allennlp_tune.commands.tune_compare import TuneCompare
from allennlp_tune.commands.tune_data import TuneData
from allennlp_tune.commands.tune_export import TuneExport
from allennlp_tune.commands.tune_grid import TuneGrid
from allennlp_tune.commands.tune_layers import TuneLayers
from allennlp_tune.commands.tune_report import TuneReport
from allennlp_tune.commands.tune_search import TuneSearch
from allennlp_tune.commands.tune_test import TuneTest

__all__ = [
    "MutualInformation",
    "Probe",
    "TuneCompare",
    "TuneData",
    "TuneExport",
    "TuneGrid",
    "TuneLayers",
    "TuneReport",
    "TuneSearch",
    "TuneTest",
]
