from pathlib import Path
from typing import List

import pytest
from allennlp.common import Params

import allennlp_tune  # noqa: F401  (registers the readers)
from allennlp_tune.data.paths import FIXTURE_DATA_DIR, FIXTURE_MODELS_DIR


@pytest.fixture(scope="session")
def tiny_bert() -> str:
    path = FIXTURE_MODELS_DIR / "bert-uncased"
    if not (path / "config.json").is_file():
        pytest.skip("fixtures/models/bert-uncased is missing")
    return str(path)


@pytest.fixture(scope="session")
def sst2_archive(tmp_path_factory, tiny_bert) -> Path:
    """A fine-tuned archive: AllenNLP's basic_classifier over a pretrained_transformer, 1 epoch."""
    from allennlp.commands.train import train_model

    def transformer(**extra):  # a fresh dict each time: Params pops keys as it builds
        return {"type": "pretrained_transformer", "model_name": tiny_bert, **extra}

    params = Params(
        {
            "dataset_reader": {
                "type": "sst2",
                "tokenizer": transformer(),
                "token_indexers": {"tokens": transformer(namespace="tags")},
            },
            "train_data_path": str(FIXTURE_DATA_DIR / "sst-2" / "train.tsv"),
            "validation_data_path": str(FIXTURE_DATA_DIR / "sst-2" / "dev.tsv"),
            "model": {
                "type": "basic_classifier",
                "text_field_embedder": {"token_embedders": {"tokens": transformer()}},
                "seq2vec_encoder": {"type": "cls_pooler", "embedding_dim": 16},
            },
            "data_loader": {"batch_size": 4, "shuffle": True},
            "trainer": {"optimizer": {"type": "adamw", "lr": 1e-3}, "num_epochs": 1},
        }
    )
    serialization_dir = tmp_path_factory.mktemp("archive") / "run"
    train_model(params, str(serialization_dir))
    return serialization_dir / "model.tar.gz"


# The fixture files of each task: (train, dev), under fixtures/data.
TASK_FILES = {
    "sst2": ("sst-2/train.tsv", "sst-2/dev.tsv"),
    "cola": ("cola/in_domain_train.tsv", "cola/in_domain_dev.tsv"),
    "mrpc": ("mrpc/msr_paraphrase_train.txt", "mrpc/msr_paraphrase_test.txt"),
    "sts_b": ("sts-b/sts-train.csv", "sts-b/sts-dev.csv"),
}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="session")
def task_files():
    """`task_files(task)` is `(train path, dev path)` of the task's fixture data."""
    return lambda task: tuple(str(FIXTURE_DATA_DIR / name) for name in TASK_FILES[task])


@pytest.fixture(scope="session")
def run_allennlp():
    """`run_allennlp(*args)` runs `allennlp.commands.main` in-process with those arguments."""
    import sys

    import allennlp.commands

    import allennlp_tune.commands  # noqa: F401  (registers the subcommands)

    def run(*args: str) -> None:
        # Session-scoped, so that module-scoped fixtures can run commands: patched per call.
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(sys, "argv", ["allennlp", *args])
            # Our subcommands are registered already: skip importing every default plugin
            # (slow); discovery through .allennlp_plugins is tested in test_discovery.py.
            patch.setattr(allennlp.commands, "import_plugins", lambda: None)
            allennlp.commands.main()

    return run


@pytest.fixture(scope="session")
def probe_args(task_files):
    """`probe_args(task, out, *extra)`: `allennlp probe` arguments on the task's fixture files."""

    def args(task: str, out, *extra: str) -> List[str]:
        train, dev = task_files(task)
        files = ["--train-file", train, "--dev-file", dev, "--output-dir", str(out)]
        return ["probe", "--reader", task, *files, *extra]

    return args


@pytest.fixture(scope="session")
def mi_args(task_files):
    """`mi_args(task, out, *extra)`: `allennlp mi` arguments on the task's fixture dev file."""

    def args(task: str, out, *extra: str) -> List[str]:
        dev = task_files(task)[1]
        return ["mi", "--reader", task, "--dev-file", dev, "--output-dir", str(out), *extra]

    return args


@pytest.fixture(scope="session")
def check_png():
    """`check_png(path)` asserts the file is a PNG that matplotlib reads as an image; returns it."""
    import matplotlib.image

    def check(path: Path):
        assert path.read_bytes()[:8] == PNG_SIGNATURE
        image = matplotlib.image.imread(str(path))
        assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100
        return image

    return check
