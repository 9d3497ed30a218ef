"""Write the test fixtures under `fixtures/` deterministically.

    python scripts/make_fixtures.py [--out fixtures]

- `fixtures/data/`: a few synthetic rows of every task, in each real file format, laid out
  exactly like `../shared/data/` (same folders and file names), so a config that reads the real
  data with `TUNE_DATA_DIR=../shared/data` reads the fixtures with `TUNE_DATA_DIR=fixtures/data`.
  The sentences are generated from a small grammar (no real data is copied).
- `fixtures/models/`: a tiny random BERT (cased and uncased, vocabularies covering the fixture
  text), a tiny random ELMo in AllenNLP's format, and one tiny random model per other encoder
  family (`roberta`, `xlm-roberta`, `deberta-v2`, `electra`, `distilbert`, `albert`, `mpnet`),
  each with its family's tokenizer over the fixture words (see `scripts/fixture_models.py`).

Running it twice gives identical files; `tests/test_fixtures.py` checks that the committed
fixtures are what this script writes.
"""

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Dict, List, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

SUBJECTS = ["A man", "A woman", "The dog", "Two kids", "A girl", "The cat", "An old man"]
VERBS = ["is playing", "is cutting", "is riding", "is eating", "is watching", "is holding"]
OBJECTS = ["a guitar", "an onion", "a horse", "the bread", "a ball", "the movie", "a flute"]
PLACES = ["in the park", "on the beach", "at home", "near the river", ""]
POSITIVE = ["a charming and funny film", "warm , moving and smart", "the best movie this year"]
NEGATIVE = ["a dull , boring mess", "the plot is thin and silly", "painfully slow and flat"]
ENTITIES = [
    (["Peter", "Blackburn"], "PER"),
    (["Maria"], "PER"),
    (["European", "Union"], "ORG"),
    (["Reuters"], "ORG"),
    (["Germany"], "LOC"),
    (["New", "York"], "LOC"),
    (["German"], "MISC"),
]
FILLER = ["said", "on", "Monday", "the", "talks", "in", "were", "good", "."]


def sentence(rng: random.Random) -> str:
    place = rng.choice(PLACES)
    text = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}"
    return f"{text} {place}".strip()


def pairs(rng: random.Random, n: int) -> List[Tuple[str, str]]:
    return [(sentence(rng), sentence(rng)) for _ in range(n)]


def write(path: Path, lines: List[str], newline: str = "\n", final: bool = True, bom=False):
    path.parent.mkdir(parents=True, exist_ok=True)
    text = newline.join(lines) + (newline if final else "")
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))


def make_sick(out: Path, rng: random.Random) -> None:
    header = (
        "pair_ID\tsentence_A\tsentence_B\tentailment_label\trelatedness_score\tentailment_AB\t"
        "entailment_BA\tsentence_A_original\tsentence_B_original\tsentence_A_dataset\t"
        "sentence_B_dataset\tSemEval_set"
    )
    labels = ["NEUTRAL", "ENTAILMENT", "CONTRADICTION"]
    rows = [header]
    splits = ["TRAIN"] * 8 + ["TRIAL"] * 4 + ["TEST"] * 4
    for pair_id, ((a, b), split) in enumerate(zip(pairs(rng, len(splits)), splits), start=1):
        label = labels[pair_id % 3]
        score = round(rng.uniform(1, 5), 1)
        rows.append(
            f"{pair_id}\t{a}\t{b}\t{label}\t{score}\tA_neutral_B\tB_neutral_A\t{a}\t{b}\t"
            f"FLICKR\tFLICKR\t{split}"
        )
    # The release file: CRLF, no newline after the last line.
    write(out / "sick" / "SICK.txt", rows, newline="\r\n", final=False)


def make_mrpc(out: Path, rng: random.Random) -> None:
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"
    train = [
        (str(i % 2), str(1000 + 2 * i), str(1001 + 2 * i), a, b)
        for i, (a, b) in enumerate(pairs(rng, 12))
    ]
    test = [
        (str(i % 2), str(5000 + 2 * i), str(5001 + 2 * i), a, b)
        for i, (a, b) in enumerate(pairs(rng, 6))
    ]
    dev_ids = [row[1:3] for row in train[::4]]
    for folder in (out / "mrpc", out / "mrpc" / "glue"):
        write(
            folder / "msr_paraphrase_train.txt",
            [header] + ["\t".join(r) for r in train],
            final=False,
            bom=True,
        )
        write(
            folder / "msr_paraphrase_test.txt",
            [header] + ["\t".join(r) for r in test],
            final=False,
            bom=True,
        )
    write(out / "mrpc" / "glue" / "dev_ids.tsv", ["\t".join(ids) for ids in dev_ids])
    dev = [row for row in train if row[1:3] in dev_ids]
    write(out / "mrpc" / "glue" / "dev.tsv", [header] + ["\t".join(r) for r in dev], bom=True)


def make_sts_b(out: Path, rng: random.Random) -> None:
    glue_header = (
        "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore"
    )
    for split, n in (("train", 12), ("dev", 6), ("test", 6)):
        rows, glue_rows = [], [glue_header]
        for i, (a, b) in enumerate(pairs(rng, n)):
            score = f"{rng.uniform(0, 5):.3f}"
            if i == 1:
                a = 'He said "no more'  # unbalanced quotes, as in the release
            fields = ["main-captions", "MSRvid", "2012test", f"{i:04d}", score, a, b]
            if i % 4 == 3:
                fields += ["source-a", "source-b"]  # the optional extra source fields
            rows.append("\t".join(fields))
            glue_rows.append(
                "\t".join(
                    [
                        str(i),
                        "main-captions",
                        "MSRvid",
                        "2012test",
                        f"{i:04d}",
                        "none",
                        "none",
                        a,
                        b,
                        score,
                    ]
                )
            )
        write(out / "sts-b" / f"sts-{split}.csv", rows)
        if split != "test":
            write(out / "sts-b" / "glue" / f"{split}.tsv", glue_rows)


def make_mnli(out: Path, rng: random.Random) -> None:
    labels = ["entailment", "neutral", "contradiction", "-"]
    for name in ("matched", "mismatched"):
        lines = ["pairID,sentence1,sentence2,label"]
        for i, (a, b) in enumerate(pairs(rng, 10)):
            if i == 2:
                a = f'{a}, "quoted" and with a comma'
            a_csv = '"' + a.replace('"', '""') + '"' if ("," in a or '"' in a) else a
            lines.append(f"{i}{name[0]},{a_csv},{b} ,{labels[i % 4]}")
        write(out / "mnli" / f"multinli_1.0_dev_{name}.csv", lines)
    records = [
        {"gold_label": labels[i % 4], "sentence1": a, "sentence2": b, "pairID": str(i)}
        for i, (a, b) in enumerate(pairs(rng, 8))
    ]
    write(out / "mnli" / "multinli_1.0_dev_matched.jsonl", [json.dumps(r) for r in records])
    tsv = ["genre\tpairID\tsentence1\tsentence2\tgold_label"]
    tsv += [
        f"fiction\t{r['pairID']}\t{r['sentence1']}\t{r['sentence2']}\t{r['gold_label']}"
        for r in records
    ]
    write(out / "mnli" / "dev_matched.tsv", tsv)
    # The official training file's name and format, for the training configs. Its own random
    # stream, so that the files written before and after it stay as they were.
    train_rng = random.Random(2019)
    train = [
        {"gold_label": labels[i % 4], "sentence1": a, "sentence2": b, "pairID": str(i)}
        for i, (a, b) in enumerate(pairs(train_rng, 13))
    ]
    write(out / "mnli" / "multinli_1.0_train.jsonl", [json.dumps(r) for r in train])


def make_sst2(out: Path, rng: random.Random) -> None:
    def rows(n: int) -> List[Tuple[str, str]]:
        return [(rng.choice(POSITIVE if i % 2 else NEGATIVE), str(i % 2)) for i in range(n)]

    write(out / "sst-2" / "train.tsv", ["sentence\tlabel"] + [f"{s}\t{y}" for s, y in rows(12)])
    write(out / "sst-2" / "dev.tsv", ["sentence\tlabel"] + [f"{s}\t{y}" for s, y in rows(6)])
    write(out / "sst-2" / "sentiment-test", [f"{s} \t{y}" for s, y in rows(6)])


def make_cola(out: Path, rng: random.Random) -> None:
    for name, n in (("in_domain_train", 12), ("in_domain_dev", 6), ("out_of_domain_dev", 6)):
        lines = []
        for i in range(n):
            text = sentence(rng) + "."
            if i % 3 == 0:
                text = " ".join(reversed(text.rstrip(".").split())) + "."
                lines.append(f"gj04\t0\t*\t{text}")
            else:
                lines.append(f"gj04\t1\t\t{text}")
        write(out / "cola" / f"{name}.tsv", lines, final=name != "out_of_domain_dev")


def conll_sentences(rng: random.Random, n: int) -> List[List[Tuple[str, str]]]:
    """Sentences as (token, IOB2 tag) lists, with adjacent same-type spans now and then."""
    sentences = []
    for i in range(n):
        words: List[Tuple[str, str]] = []
        first, kind = rng.choice(ENTITIES)
        words += [(w, ("B-" if j == 0 else "I-") + kind) for j, w in enumerate(first)]
        if i % 3 == 0:  # two adjacent spans of one type: IOB1 marks the second with B-
            second = rng.choice(
                [e for e in ENTITIES if e[1] == kind and e[0] != first][:1] or [(["Smith"], kind)]
            )[0]
            words += [(w, ("B-" if j == 0 else "I-") + kind) for j, w in enumerate(second)]
        words += [(w, "O") for w in rng.sample(FILLER[:-1], 3)]
        other, other_kind = rng.choice(ENTITIES)
        words += [(w, ("B-" if j == 0 else "I-") + other_kind) for j, w in enumerate(other)]
        words.append((".", "O"))
        sentences.append(words)
    return sentences


def iob2_to_iob1(tags: List[str]) -> List[str]:
    result, previous = [], "O"
    for tag in tags:
        if tag.startswith("B-") and not (previous != "O" and previous[2:] == tag[2:]):
            tag = "I-" + tag[2:]
        result.append(tag)
        previous = tag
    return result


def conll_lines(sentences, scheme: str, docstart_at_end: bool) -> List[str]:
    lines: List[str] = []
    docstart = "-DOCSTART- -X- -X- O"
    if not docstart_at_end:
        lines += [docstart, ""]
    for index, words in enumerate(sentences):
        tags = [tag for _, tag in words]
        if scheme == "IOB1":
            tags = iob2_to_iob1(tags)
        chunks = [
            "I-NP" if scheme == "IOB1" else ("B-NP" if j == 0 else "I-NP")
            for j in range(len(words))
        ]
        for (word, _), tag, chunk in zip(words, tags, chunks):
            lines.append(f"{word} NNP {chunk} {tag}")
        lines.append("")
        if index == len(sentences) // 2 and not docstart_at_end:
            lines += [docstart, ""]
    if docstart_at_end:  # the original eng.* copies: the first DOCSTART sits at the end
        lines.append("-DOCSTART- -X- O O")
    return lines


def make_conll(out: Path, rng: random.Random) -> None:
    for iob1_name, iob2_name, n in (
        ("eng.train", "train.txt", 10),
        ("eng.testa", "valid.txt", 5),
        ("eng.testb", "test.txt", 5),
    ):
        sentences = conll_sentences(rng, n)
        write(out / "conll2003" / iob1_name, conll_lines(sentences, "IOB1", True))
        write(out / "conll2003" / "iob2" / iob2_name, conll_lines(sentences, "IOB2", False))


def make_data_fixtures(out: Path) -> None:
    rng = random.Random(13)
    for make in (make_sick, make_mrpc, make_sts_b, make_mnli, make_sst2, make_cola, make_conll):
        make(out, rng)


def fixture_words(data_dir: Path) -> List[str]:
    """Every whitespace/punctuation-separated word of the fixture text (for the BERT vocab)."""
    import re

    words = set()
    for path in sorted(data_dir.rglob("*")):
        if path.is_file():
            words.update(re.findall(r"\w+|[^\w\s]", path.read_text(encoding="utf-8-sig")))
    return sorted(words)


def main(argv: List[str] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default = Path(__file__).resolve().parent.parent / "fixtures"
    parser.add_argument("--out", type=Path, default=default)
    parser.add_argument("--data-only", action="store_true", help="skip the models")
    args = parser.parse_args(argv)
    make_data_fixtures(args.out / "data")
    if not args.data_only:
        from fixture_models import make_model_fixtures

        make_model_fixtures(args.out / "models", fixture_words(args.out / "data"))
    counts: Dict[str, int] = {}
    for path in sorted(args.out.rglob("*")):
        if path.is_file():
            top = path.relative_to(args.out).parts[0]
            counts[top] = counts.get(top, 0) + 1
    print(f"wrote {counts} files under {args.out}")


if __name__ == "__main__":
    main()
