"""Exports SICK-E, STS-B and CoLA from the data folder as a user's own files, with task files.

    python scripts/export_user_tasks.py OUT_DIR [--data-dir DIR]

writes, for `allennlp tune-compare OUT_DIR/<task>/task.json ...` (issue #14's check that a
user's own table trains exactly as the paper's cell on the same rows):

- `sick_e_table/{train,dev}.csv`: SICK's TRAIN and TRIAL rows as CSV with a header and the
  columns renamed (`first`, `second`, `gold`), the columns a user would pick, nothing else;
- `sts_b_table/{train,dev}.jsonl`: STS-B's train and dev rows as JSON lines with keys `a`, `b`,
  `similarity` (the score as a number);
- `cola_table/{train,dev}.csv`: CoLA's in-domain train and dev sentences as CSV with a header
  (`sentence`, `acceptable`) and the labels a user would write (`yes` / `no`), for the one command
  on a task no shipped recipe was tuned on (docs/results/NOTEBOOK.md section 17);
- a `task.json` beside each, with the `tune_table` reader and paths relative to it.

Rows keep the order and the text of the release files, so the instances equal the paper
readers' (the shipped tasks `sick_e` and `sts_b`).
"""

import argparse
import csv
import json
from pathlib import Path
from typing import Iterable, Iterator, List

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "data"


def sick_rows(data_dir: Path, split: str) -> Iterator[List[str]]:
    """`[sentence_A, sentence_B, entailment_label]` of SICK.txt's rows of one SemEval_set."""
    with open(data_dir / "sick" / "SICK.txt", encoding="utf-8", newline="") as sick:
        for line_number, line in enumerate(sick, start=1):
            fields = line.rstrip("\r\n").split("\t")
            if line_number == 1 or fields[11] != split:
                continue
            yield [fields[1], fields[2], fields[3]]


def sts_rows(path: Path) -> Iterator[dict]:
    """STS-B's release rows (genre, file, year, id, score, s1, s2[, source, ...])."""
    with open(path, encoding="utf-8") as sts:
        for line in sts:
            fields = line.rstrip("\r\n").split("\t")
            yield {"a": fields[5], "b": fields[6], "similarity": float(fields[4])}


def cola_rows(path: Path) -> Iterator[List[str]]:
    """`[sentence, yes|no]` of a CoLA release file (source, label 0/1, original mark, sentence)."""
    with open(path, encoding="utf-8") as cola:
        for line in cola:
            fields = line.rstrip("\r\n").split("\t")
            yield [fields[3], "yes" if fields[1] == "1" else "no"]


def write_csv(path: Path, header: List[str], rows: Iterable[List[str]]) -> None:
    """A CSV file with a header row, as a spreadsheet would save it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as table:
        writer = csv.writer(table)
        writer.writerow(header)
        writer.writerows(rows)


def export_cola(out_dir: Path, data_dir: Path) -> None:
    cola = out_dir / "cola_table"
    for name, source in (("train.csv", "in_domain_train.tsv"), ("dev.csv", "in_domain_dev.tsv")):
        write_csv(cola / name, ["sentence", "acceptable"], cola_rows(data_dir / "cola" / source))
    cola_task = {
        "name": "cola_user",
        "kind": "classification",
        "reader": {
            "type": "tune_table",
            "header": True,
            "text": "sentence",
            "label": "acceptable",
            "labels_file": "train.csv",
        },
        "train": "train.csv",
        "validation": "dev.csv",
        "metric": "+mcc",
    }
    (cola / "task.json").write_text(json.dumps(cola_task, indent=2) + "\n", encoding="utf-8")


def export(out_dir: Path, data_dir: Path) -> None:
    sick = out_dir / "sick_e_table"
    for name, split in (("train.csv", "TRAIN"), ("dev.csv", "TRIAL")):
        write_csv(sick / name, ["first", "second", "gold"], sick_rows(data_dir, split))
    sick_task = {
        "name": "sick_e_table",
        "kind": "pair_classification",
        "reader": {
            "type": "tune_table",
            "header": True,
            "text": "first",
            "text_pair": "second",
            "label": "gold",
            "labels_file": "train.csv",
        },
        "train": "train.csv",
        "validation": "dev.csv",
        "metric": "+accuracy",
    }
    (sick / "task.json").write_text(json.dumps(sick_task, indent=2) + "\n", encoding="utf-8")

    sts = out_dir / "sts_b_table"
    sts.mkdir(parents=True, exist_ok=True)
    for name, source in (("train.jsonl", "sts-train.csv"), ("dev.jsonl", "sts-dev.csv")):
        with open(sts / name, "w", encoding="utf-8") as lines:
            for row in sts_rows(data_dir / "sts-b" / source):
                lines.write(json.dumps(row) + "\n")
    sts_task = {
        "name": "sts_b_table",
        "kind": "pair_regression",
        "reader": {"type": "tune_table", "text": "a", "text_pair": "b", "label": "similarity"},
        "train": "train.jsonl",
        "validation": "dev.jsonl",
        "metric": "+pearson",
    }
    (sts / "task.json").write_text(json.dumps(sts_task, indent=2) + "\n", encoding="utf-8")
    export_cola(out_dir, data_dir)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    args = parser.parse_args()
    export(args.out_dir, args.data_dir)


if __name__ == "__main__":
    main()
