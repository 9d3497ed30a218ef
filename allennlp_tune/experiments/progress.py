"""
What a run in progress has got to, for the grid's progress bar: the last epoch it finished and
that epoch's primary dev metric (`epoch_status`), shown after the bar's label while the run
trains (`EpochProgress`).
"""

import threading
from pathlib import Path
from typing import Optional

from allennlp.common.checks import ConfigurationError

from allennlp_tune.rundir import CONFIG_NAME, metric_of_config, read_json


def epoch_status(run_dir: Path) -> Optional[str]:
    """
    `epoch 2/3, dev accuracy 0.8125`: the last epoch a training run in `run_dir` finished (its
    `metrics_epoch_<n>.json`) and that epoch's primary dev metric (the trainer's
    `validation_metric` in `config.json`); `None` before the first epoch ends.
    """
    epochs = sorted(
        int(path.stem.rpartition("_")[2])
        for path in run_dir.glob("metrics_epoch_*.json")
        if path.stem.rpartition("_")[2].isdigit()
    )
    if not epochs:
        return None
    config = read_json(run_dir / CONFIG_NAME) or {}
    trainer = config.get("trainer") if isinstance(config.get("trainer"), dict) else {}
    total = trainer.get("num_epochs")
    text = f"epoch {epochs[-1] + 1}" + (f"/{total}" if isinstance(total, int) else "")
    try:
        metric, _ = metric_of_config(config)
    except ConfigurationError:
        return text
    value = (read_json(run_dir / f"metrics_epoch_{epochs[-1]}.json") or {}).get(
        f"validation_{metric}"
    )
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        text += f", dev {metric} {value:.4f}"
    return text


class EpochProgress:
    """
    While a run trains, a thread shows `epoch_status` of its directory after the bar's label
    (polled every `interval` seconds; AllenNLP writes a metrics file at the end of each epoch).
    """

    def __init__(
        self, bar, label: str, run_dir: Path, enabled: bool = True, interval: float = 2.0
    ) -> None:
        self.bar, self.label, self.run_dir = bar, label, run_dir
        self.interval = interval
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True) if enabled else None

    def _poll(self) -> None:
        shown = None
        while not self.stopped.wait(self.interval):
            status = epoch_status(self.run_dir)
            if status is not None and status != shown:
                self.bar.set_postfix_str(f"{self.label}, {status}")
                shown = status

    def __enter__(self) -> "EpochProgress":
        if self.thread is not None:
            self.thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stopped.set()
        if self.thread is not None:
            self.thread.join()
