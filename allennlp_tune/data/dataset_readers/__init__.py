"""Dataset readers for the paper's tasks; each module documents the file format it reads."""

from allennlp_tune.data.dataset_readers.cola import ColaReader
from allennlp_tune.data.dataset_readers.conll2003 import TuneConll2003Reader
from allennlp_tune.data.dataset_readers.mnli import MnliReader
from allennlp_tune.data.dataset_readers.mrpc import MrpcReader
from allennlp_tune.data.dataset_readers.sick import SickReader
from allennlp_tune.data.dataset_readers.sst2 import Sst2Reader
from allennlp_tune.data.dataset_readers.sts_b import StsBReader
from allennlp_tune.data.dataset_readers.tune_columns import TuneColumnsReader
from allennlp_tune.data.dataset_readers.tune_table import TuneTableReader
from allennlp_tune.data.dataset_readers.tune_table_pair import TuneTablePairReader

__all__ = [
    "ColaReader",
    "MnliReader",
    "MrpcReader",
    "SickReader",
    "Sst2Reader",
    "StsBReader",
    "TuneColumnsReader",
    "TuneConll2003Reader",
    "TuneTablePairReader",
    "TuneTableReader",
]
