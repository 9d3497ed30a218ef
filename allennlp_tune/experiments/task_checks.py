"""
Checks of a task file that `tune-compare` makes before it writes or trains anything, so that a
typo or a mismatch stops the command at once with a message naming the file, the key, the value
and the fix, instead of a `TypeError` traceback, a run that trains the wrong thing, or a failure
at the end of the first epoch:

- `check_keys`: every key of the task file is one the experiment library reads (a misspelt
  `tset` would silently drop the test set);
- `check_name_length`: the task name starts every run folder's and config file's name;
- `check_metric`: the metric is one that the task kind's models report, with the sign that
  keeps the best epoch (`-accuracy` would keep the worst);
- `check_num_labels`: a given `num_labels` agrees with the reader's label set;
- `check_reader`: every reader parameter is one the registered reader class takes;
- `check_data_path`: a data path is a regular file, and a symbolic link in the task file's
  folder is followed only when it stays inside that folder (or the task file allows it).
"""

import difflib
import inspect
import os
import stat
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from allennlp.common.checks import ConfigurationError

# Run folders and config files are named `<task>_<encoder>_<mode>`; a file name may have at most
# 255 bytes, and names this long are unreadable in tables anyway.
MAX_NAME_LENGTH = 64

# What each kind's models report at validation (`allennlp_tune/training/metrics/task_metrics.py`:
# `ClassificationMetrics`, `RegressionMetrics`; the taggers: AllenNLP's `SimpleTagger` and
# `CrfTagger` with span F1 and without verbose metrics), split by the direction in which they
# improve. AllenNLP's trainer adds `loss`.
RISING_METRICS: Dict[str, Tuple[str, ...]] = {
    "classification": ("accuracy", "mcc"),
    "regression": ("pearson", "spearman"),
    "tagging": (
        "accuracy",
        "accuracy3",
        "precision-overall",
        "recall-overall",
        "f1-measure-overall",
    ),
}
FALLING_METRICS: Dict[str, Tuple[str, ...]] = {
    "classification": ("loss",),
    "regression": ("mse", "loss"),
    "tagging": ("loss",),
}
# Classification reports these of `positive_label`, and only when the task names one.
POSITIVE_LABEL_METRICS = ("precision", "recall", "f1")

# Reader keys that `experiment.libsonnet`'s `cell()` sets itself (the encoder's indexers and
# tokenizer, TUNE_MAX_INSTANCES, the pair encoding, a tune_table reader's kind, the tagging
# scheme); a reader whose constructor lacks one fails in AllenNLP with its own message.
LIBRARY_READER_KEYS = (
    "type",
    "token_indexers",
    "tokenizer",
    "max_instances",
    "pair_encoding",
    "kind",
    "convert_to_coding_scheme",
)


def _did_you_mean(value: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(value, list(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _refuse_unknown(
    keys: Iterable[str], known: Sequence[str], message: Callable[[str], str]
) -> None:
    """Raises `message(key)` for the first of `keys` that is not `known`."""
    key = next((key for key in keys if key not in known), None)
    if key is not None:
        raise ConfigurationError(message(key))


def check_keys(fields: Mapping[str, Any], known: Sequence[str], where: str) -> None:
    """Refuses a key that the experiment library does not read, naming the nearest known one."""
    _refuse_unknown(
        fields,
        known,
        lambda key: (
            f"{where}: unknown key {key!r}{_did_you_mean(key, known)} (known keys: "
            f"{', '.join(known)})."
        ),
    )


def check_name_length(name: str, where: str) -> None:
    """Refuses a task name too long to name run folders and config files."""
    if len(name) > MAX_NAME_LENGTH:
        raise ConfigurationError(
            f"{where}: name is {len(name)} characters long ({name[:20]!r}...); give at most "
            f"{MAX_NAME_LENGTH}: it starts every run folder's and config file's name, "
            "<task>_<encoder>_<mode>."
        )


def metric_family(kind: str) -> str:
    """`pair_classification` -> `classification`: the pair kinds report what their kind does."""
    return kind[len("pair_") :] if kind.startswith("pair_") else kind


def reported_metrics(kind: str, positive_label: bool) -> Tuple[List[str], List[str]]:
    """The metrics a kind's models report: (those that rise when better, those that fall)."""
    family = metric_family(kind)
    rising = list(RISING_METRICS[family])
    if family == "classification" and positive_label:
        rising += POSITIVE_LABEL_METRICS
    return rising, list(FALLING_METRICS[family])


def check_metric(metric: Any, kind: str, positive_label: bool, where: str) -> None:
    """
    Refuses a metric that the kind's models do not report, a metric without its sign, and a
    sign that would keep the worst epoch (`-accuracy`, `+loss`). `metric` is the task's
    `metric`, AllenNLP's `validation_metric`: a string or a list of them.
    """
    metrics = metric if isinstance(metric, list) else [metric]
    if not metrics or not all(isinstance(item, str) for item in metrics):
        raise ConfigurationError(
            f"{where}: metric is {metric!r}; expected a signed metric name such as '+accuracy'."
        )
    rising, falling = reported_metrics(kind, positive_label)
    for item in metrics:
        _check_one_metric(item, kind, rising, falling, positive_label, where)


def _signed(names: Iterable[str], sign: str) -> List[str]:
    return [f"{sign}{name}" for name in names]


def _check_one_metric(
    metric: str,
    kind: str,
    rising: List[str],
    falling: List[str],
    positive_label: bool,
    where: str,
) -> None:
    sign, name = (metric[0], metric[1:]) if metric[:1] in ("+", "-") else ("", metric)
    classification = metric_family(kind) == "classification"
    if name in POSITIVE_LABEL_METRICS and classification and not positive_label:
        raise ConfigurationError(
            f"{where}: metric {metric!r} is reported only for a positive_label; add "
            '"positive_label" (the label whose precision, recall and F1 to report, e.g. "1") '
            "or pick another metric."
        )
    if name not in rising + falling:
        candidates = rising + falling
        if classification and not positive_label:
            candidates += POSITIVE_LABEL_METRICS
        close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.5)
        hint = ""
        if close:
            hint = f"; did you mean '{'-' if close[0] in falling else '+'}{close[0]}'?"
        reported = ", ".join(_signed(rising, "+") + _signed(falling, "-"))
        extra = ""
        if classification and not positive_label:
            extra = f", and with positive_label {', '.join(_signed(POSITIVE_LABEL_METRICS, '+'))}"
        raise ConfigurationError(
            f"{where}: metric {metric!r}: the models of kind {kind} do not report {name!r}{hint} "
            f"(they report {reported}{extra})."
        )
    right = "+" if name in rising else "-"
    if sign == "":
        raise ConfigurationError(
            f"{where}: metric {metric!r} lacks its direction; write '{right}{name}' ('+' keeps "
            "the epoch where it is highest, '-' where it is lowest)."
        )
    if sign != right:
        better = "higher" if right == "+" else "lower"
        kept = "lowest" if right == "+" else "highest"
        raise ConfigurationError(
            f"{where}: metric {metric!r} would keep the epoch with the {kept} {name}, the worst "
            f"one ({better} is better); write '{right}{name}'."
        )


def check_num_labels(given: Any, counted: Optional[Tuple[int, str]], where: str) -> None:
    """
    Refuses a `num_labels` that is no whole number >= 2, or that differs from the reader's
    count of its labels (`counted`: the count and where it comes from, `None` if unknown).
    """
    if isinstance(given, bool) or not isinstance(given, int) or given < 2:
        raise ConfigurationError(
            f"{where}: num_labels is {given!r}; expected the number of classes, a whole number "
            "of at least 2."
        )
    if counted is not None and given != counted[0]:
        number, source = counted
        raise ConfigurationError(
            f"{where}: num_labels is {given}, but the reader's {source} has {number} labels; "
            f"set num_labels to {number}, or remove it (tune-compare counts the labels)."
        )


def reader_parameters(reader_class: type) -> Set[str]:
    """
    The parameters a reader class's constructor takes, with those of its base classes where
    the constructor passes `**kwargs` on (as AllenNLP's `from_params` does).
    """
    names: Set[str] = set()
    for klass in reader_class.__mro__:
        constructor = klass.__dict__.get("__init__")
        if constructor is None:
            continue
        parameters = inspect.signature(constructor).parameters.values()
        names.update(
            parameter.name
            for parameter in parameters
            if parameter.name != "self"
            and parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)
        )
        if not any(parameter.kind == parameter.VAR_KEYWORD for parameter in parameters):
            break
    return names


def check_reader(
    config: Mapping[str, Any], field: str, where: str, reader_type: Optional[str] = None
) -> None:
    """
    Refuses a reader `type` that is not registered and a parameter that the reader class does
    not take (`delimeter`), naming the nearest one. `reader_type` is the type of the reader
    that `config` is merged into (`validation_reader` into `reader`).
    """
    from allennlp.data import DatasetReader

    name = config.get("type", reader_type)
    if not isinstance(name, str):
        raise ConfigurationError(
            f"{where}: {field} has no type; give the dataset reader's registered name, e.g. "
            '"type": "tune_table".'
        )
    try:
        reader_class, constructor = DatasetReader.resolve_class_name(name)
    except ConfigurationError:
        available = sorted(DatasetReader.list_available())
        raise ConfigurationError(
            f"{where}: {field}.type {name!r} is no registered dataset reader"
            f"{_did_you_mean(name, available)} (registered: {', '.join(available)})."
        ) from None
    if constructor is not None:  # a registered classmethod: its own parameters
        accepted = set(inspect.signature(getattr(reader_class, constructor)).parameters)
    else:
        accepted = reader_parameters(reader_class)
    known = sorted(accepted | set(LIBRARY_READER_KEYS))
    _refuse_unknown(
        config,
        known,
        lambda key: (
            f"{where}: {field}.{key}: the {name!r} reader takes no parameter {key!r}"
            f"{_did_you_mean(key, known)} (its parameters: {', '.join(sorted(accepted))})."
        ),
    )


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def escaping_link(path: str, folder: Path) -> Optional[Tuple[str, str]]:
    """
    The first symbolic link on `path` inside `folder` whose target lies outside `folder`, as
    (link, resolved target); `None` if there is none. Only links inside the folder count: a path
    written outside it, and the folders above it, are the task author's and the system's choice.
    """
    folder_path = os.path.abspath(folder)
    path = os.path.abspath(path)
    if not _inside(path, folder_path) or path == folder_path:
        return None
    real_folder = os.path.realpath(folder_path)
    current = folder_path
    for part in Path(os.path.relpath(path, folder_path)).parts:
        current = os.path.join(current, part)
        if os.path.islink(current):
            target = os.path.realpath(current)
            if not _inside(target, real_folder):
                return current, target
    return None


def describe_file_type(path: str) -> Optional[str]:
    """What `path` is when it is not a regular file ("a directory"); `None` for a regular file."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "missing"
    except OSError as error:
        return f"unreadable ({error.strerror})"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def check_data_path(
    key: str,
    written: str,
    path: str,
    where: str,
    relative_to: str,
    folder: Optional[Path] = None,
    allow_outside_links: bool = False,
) -> None:
    """
    Refuses a data path (`key` as `written` in the task file, `path` absolute) that does not
    exist or is no regular file, and, with `folder` (a task file's own folder), one that
    follows a symbolic link out of that folder, naming the link and its target without
    reading it, unless the task file says `allow_outside_links: true`.
    """
    if folder is not None and not allow_outside_links:
        link = escaping_link(path, folder)
        if link is not None:
            raise ConfigurationError(
                f"{where}: {key} {written!r} is {path}, which goes through the symbolic link "
                f"{link[0]} to {link[1]}, outside the task file's folder {folder}; it is not "
                'followed. Copy the data into the folder, or add "allow_outside_links": true '
                "to the task file to follow links out of it."
            )
    what = describe_file_type(path)
    if what == "missing":
        raise ConfigurationError(
            f"{where}: {key} {written!r} is {path}, which does not exist (relative to "
            f"{relative_to})."
        )
    if what is not None:
        raise ConfigurationError(
            f"{where}: {key} {written!r} is {path}, which is {what}, not a data file (relative "
            f"to {relative_to})."
        )
