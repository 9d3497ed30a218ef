"""
What a run that succeeded leaves besides its score, and the run record every run gets.

- `archive_bytes`, the size of `model.tar.gz`, goes into its `cost.json` (which the `tune_cost`
  trainer callback writes; created if the config has no such callback): `record_archive_size`.
- `dev_predictions.jsonl`: the archived (best) model's predictions on the validation data, one
  `{"index": i, "gold": G, "prediction": P}` line per example in input order
  (`write_dev_predictions`). tune-grid writes them in a subprocess (`predict_subprocess`, log
  `tune_predict.log`), so its own process never holds a model or a GPU; tune-search in its
  own process (`predict_in_process`), where the trial trained. A prediction that fails is
  noted in `tune_run.json` (`predictions_error`); the run still counts as complete.
- `outputs` in `tune_run.json`: the size and sha256 of each output the report reads
  (`metrics.json`, `dev_predictions.jsonl`, `model.tar.gz`: `rundir.digests`), taken once they
  are all written, so that the grid, the rounds and the report can tell a run's files from
  files changed, cut short or replaced after it finished.
- `tune_run.json`, the run record: `run_record` builds its first fields (which tool trained
  which config, task, encoder, mode, variant, seed and ext vars) the same way for a grid's run
  and for a search's trial, so the report reads both alike.
"""

import json
import logging
import os
import sys
import tarfile
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional

from allennlp.common.checks import ConfigurationError

from allennlp_tune.experiments.fingerprint import FINGERPRINT_KEY, fingerprint
from allennlp_tune.experiments.process import last_line, train_subprocess
from allennlp_tune.quiet import root_logging
from allennlp_tune.rundir import (
    ARCHIVE_NAME,
    CONFIG_NAME,
    COST_NAME,
    OUTPUTS_KEY,
    PREDICTIONS_NAME,
    config_stem,
    loader_batch_size,
    parse_run_name,
    read_json,
    record_digests,
    timestamp,
    write_json,
)

logger = logging.getLogger(__name__)

PREDICT_LOG_NAME = "tune_predict.log"
DEFAULT_PREDICTION_BATCH_SIZE = 32

# predictor(run_dir, environment, log_path) -> None, or what went wrong.
Predictor = Callable[[Path, Dict[str, str], Path], Optional[str]]


def record_archive_size(run_dir: Path) -> Optional[int]:
    """
    Adds `archive_bytes` (the size of `model.tar.gz`) to the run's `cost.json`, creating it
    when the config had no `tune_cost` callback. Returns the size; `None` without an archive.
    """
    archive = Path(run_dir) / ARCHIVE_NAME
    if not archive.is_file():
        return None
    size = archive.stat().st_size
    cost = read_json(Path(run_dir) / COST_NAME) or {}
    cost["archive_bytes"] = size
    write_json(Path(run_dir) / COST_NAME, cost)
    return size


def prediction_device(config: Mapping[str, Any]) -> int:
    """The GPU a run trained on (`trainer.cuda_device`, else the first of `distributed`'s
    `cuda_devices`) when this machine has CUDA, else -1 (CPU)."""
    trainer = config.get("trainer") if isinstance(config.get("trainer"), dict) else {}
    device = trainer.get("cuda_device")
    distributed = config.get("distributed")
    if isinstance(distributed, dict) and distributed.get("cuda_devices"):
        device = distributed["cuda_devices"][0]
    if not isinstance(device, int) or isinstance(device, bool) or device < 0:
        return -1
    import torch

    return device if torch.cuda.is_available() else -1


def prediction_batch_size(config: Mapping[str, Any]) -> int:
    """The batch size of the config's validation (else training) data loader, else 32."""
    size = loader_batch_size(config, ("validation_data_loader", "data_loader"))
    return size or DEFAULT_PREDICTION_BATCH_SIZE


def _gold(instance) -> Any:
    """The instance's gold answer: tag strings, a label string, a float score; `None` if none."""
    from allennlp.data.fields import LabelField, SequenceLabelField, TensorField

    tags = instance.fields.get("tags")
    if isinstance(tags, SequenceLabelField):
        return [str(tag) for tag in tags.labels]
    label = instance.fields.get("label")
    if isinstance(label, LabelField):
        return str(label.label)
    if isinstance(label, TensorField):
        return float(label.tensor.reshape(-1)[0])
    return None


# Where the shipped models (and AllenNLP's) put a regression score.
SCORE_KEYS = ("score", "predicted_score", "prediction")


def _prediction(output: Mapping[str, Any], gold: Any) -> Any:
    """The model's answer in the form of `gold`: tags, label or score (from its outputs)."""
    if "tags" in output and (gold is None or isinstance(gold, list)):
        return [str(tag) for tag in output["tags"]]
    if "label" in output and not isinstance(gold, float):
        return str(output["label"])
    for key in SCORE_KEYS:
        if key in output:
            value = output[key]
            return float(value[0] if isinstance(value, list) else value)
    raise ConfigurationError(
        f"The model's outputs ({', '.join(sorted(output))}) have no 'tags', 'label' or "
        f"{', '.join(repr(key) for key in SCORE_KEYS)} to write as its prediction."
    )


def load_for_prediction(run_dir: Path, cuda_device: Optional[int], purpose: str):
    """
    The run's archive (`load_archive`) and a predictor of its model, for `purpose` (what the
    pass is, for the feature cache's note). The pass reads the feature cache but does not grow
    it. An archive whose encoder was fine-tuned (sf, or any schedule that starts frozen) loads in
    its frozen first stage, so the cache applies, keyed by the tuned weights: writing would
    store the whole split once more per run, for features no other run can read.
    `cuda_device`: `None` for the device the run trained on (`prediction_device`).
    """
    from allennlp.models.archival import load_archive
    from allennlp.predictors import Predictor

    from allennlp_tune.modules.feature_cache import FeatureCache

    archive_path = Path(run_dir) / ARCHIVE_NAME
    if not tarfile.is_tarfile(archive_path):
        raise ConfigurationError(f"{archive_path} is not a model archive")
    if cuda_device is None:
        cuda_device = prediction_device(read_json(Path(run_dir) / CONFIG_NAME) or {})
    archive = load_archive(str(archive_path), cuda_device=cuda_device)
    for module in archive.model.modules():
        cache = getattr(module, "feature_cache", None)
        if isinstance(cache, FeatureCache):
            cache.read_only(purpose)
    try:
        predictor = Predictor.from_archive(archive)
    except Exception as error:  # e.g. a default predictor that needs a spaCy model
        logger.info("Predicting with the base Predictor: %s", error)
        archive.model.eval()
        predictor = Predictor(archive.model, archive.validation_dataset_reader)
    return archive, predictor


def write_predictions(predictor, reader, data_path: str, target: Path, batch_size: int) -> int:
    """
    Writes `target` (atomically): `predictor`'s answer on every instance `reader` yields from
    `data_path`, in its order, one `{"index": i, "gold": G, "prediction": P}` line each (see
    `write_dev_predictions`). Returns the number of lines.
    """
    temporary = target.with_name(target.name + ".tmp")
    index = 0
    with open(temporary, "w", encoding="utf-8") as out:
        batch: List[Any] = []

        def flush() -> None:
            nonlocal index
            golds = [_gold(instance) for instance in batch]
            outputs = predictor.predict_batch_instance(batch)
            for gold, output in zip(golds, outputs):
                line = {"index": index, "gold": gold, "prediction": _prediction(output, gold)}
                out.write(json.dumps(line) + "\n")
                index += 1
            batch.clear()

        for instance in reader.read(data_path):
            batch.append(instance)
            if len(batch) == batch_size:
                flush()
        if batch:
            flush()
    os.replace(temporary, target)
    return index


def write_dev_predictions(
    run_dir: Path, cuda_device: Optional[int] = None, batch_size: Optional[int] = None
) -> int:
    """
    Writes `dev_predictions.jsonl` into `run_dir`: the archived (best) model's predictions on
    the run's validation data, one line per instance the validation reader yields, in its
    order: `{"index": i, "gold": G, "prediction": P}`, with G and P label strings
    (classification), floats (regression) or lists of tag strings, one per word in the task's
    coding scheme (tagging). Uses AllenNLP's own machinery: `load_archive`, the archive's
    validation reader and the model's default predictor (`forward_on_instances` and
    `make_output_human_readable`). Returns the number of lines; written atomically.
    `cuda_device`: `None` for the device the run trained on (`prediction_device`).
    """
    run_dir = Path(run_dir)
    archive, predictor = load_for_prediction(
        run_dir, cuda_device, "dev predictions of a finished run"
    )
    data_path = archive.config.get("validation_data_path", None)
    if not data_path:
        raise ConfigurationError(
            f"{run_dir / ARCHIVE_NAME}: its config has no validation_data_path"
        )
    size = batch_size or prediction_batch_size(read_json(run_dir / CONFIG_NAME) or {})
    return write_predictions(
        predictor, archive.validation_dataset_reader, data_path, run_dir / PREDICTIONS_NAME, size
    )


_PREDICT_SCRIPT = (
    "import sys, allennlp_tune; "
    "from allennlp_tune.experiments.outputs import write_dev_predictions; "
    "print(write_dev_predictions(sys.argv[1]), 'dev predictions')"
)


def predict_command(run_dir: Path) -> List[str]:
    return [sys.executable, "-c", _PREDICT_SCRIPT, str(Path(run_dir).resolve())]


def predict_subprocess(run_dir: Path, environment: Dict[str, str], log_path: Path) -> Optional[str]:
    """
    `write_dev_predictions` for a finished grid run, in a subprocess (`train_subprocess`: it
    dies with the grid and keeps its lock), so the grid's process never holds a model or a GPU.
    `None` when it wrote them, else what went wrong.
    """
    archive = Path(run_dir) / ARCHIVE_NAME
    if not tarfile.is_tarfile(archive):
        return f"{ARCHIVE_NAME} is not a model archive"
    returncode = train_subprocess(predict_command(run_dir), environment, log_path)
    if returncode != 0 or not (Path(run_dir) / PREDICTIONS_NAME).is_file():
        last = last_line(log_path)
        return f"exit code {returncode}" + (f": {last}" if last else "")
    return None


def predict_in_process(run_dir: Path, environment: Dict[str, str], log_path: Path) -> Optional[str]:
    """
    `write_dev_predictions` in this process (tune-search trains in-process too), its log lines
    (the archive's and the reader's parameters, at INFO) in `log_path` as a prediction in its
    own process writes them, not on the command's terminal.
    """
    to_file = logging.FileHandler(log_path, encoding="utf-8")
    to_file.setFormatter(logging.Formatter("%(asctime)s - %(levelname)s - %(name)s - %(message)s"))
    try:
        with root_logging([to_file], logging.INFO):
            write_dev_predictions(run_dir)
    except Exception as error:
        return f"{type(error).__name__}: {error}"[:300]
    return None


def record_run_outputs(
    run_dir: Path, environment: Dict[str, str], predict: Optional[Predictor]
) -> Dict[str, Any]:
    """
    After a run succeeded: `archive_bytes` into its `cost.json` and, with `predict`, its dev
    predictions (log: `tune_predict.log`). Returns what to add to its `tune_run.json`: the
    `fingerprint` of what it trained from (`fingerprint.fingerprint` of its `config.json`: the
    files' digests and package versions now, just after training), `predictions` (the file's
    name) or `predictions_error`, and `outputs`, the digests of its outputs as they are now
    (`rundir.digests`). The same for a grid's runs and a search's trials. Never raises for a
    failed prediction: the run itself is fine.
    """
    record_archive_size(run_dir)
    added: Dict[str, Any] = {
        FINGERPRINT_KEY: fingerprint(read_json(Path(run_dir) / CONFIG_NAME) or {})
    }
    if predict is not None:
        error = predict(Path(run_dir), environment, Path(run_dir) / PREDICT_LOG_NAME)
        if error is None:
            added["predictions"] = PREDICTIONS_NAME
        else:
            added["predictions_error"] = error
    added[OUTPUTS_KEY] = record_digests(Path(run_dir))
    return added


def run_record(
    tool: str,
    config: Path,
    seed: int,
    ext_vars: Mapping[str, str],
    variant: Optional[str] = None,
    **details: Any,
) -> Dict[str, Any]:
    """
    The `tune_run.json` of a run as it starts: the `tool` that trains it, its config, the task,
    encoder and mode its config's name gives (`rundir.parse_run_name`; `None` for a name
    outside the convention), its `variant` (the name's own unless given), seed, ext vars, the
    caller's `details` and when it started. The caller adds how it ended (`status`, `error`,
    `finished`, ...) and writes it once the run is over.
    """
    name, _ = parse_run_name(config_stem(config))
    if variant is None and name:
        variant = name.variant
    return {
        "tool": tool,
        "config": str(Path(config).resolve()),
        "task": name.task if name else None,
        "encoder": name.encoder if name else None,
        "mode": name.mode if name else None,
        "variant": variant,
        "seed": seed,
        "ext_vars": dict(ext_vars),
        **details,
        "started": timestamp(),
    }
