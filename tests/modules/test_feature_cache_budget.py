"""
The feature cache's disk budget (`disk_mb`, `min_free_mb` and its default margin): entries past
it are not written and are recomputed, with the same results; the planner's estimate and check.
"""

import collections
import hashlib
import json
import logging
import os
import shutil
import sys
from pathlib import Path
from typing import Dict, List

import pytest
import torch
from allennlp.commands import main
from allennlp.common.checks import ConfigurationError
from allennlp.data.tokenizers import PretrainedTransformerTokenizer

from allennlp_tune.modules.feature_cache import (
    ENTRY_HEADER_BYTES,
    ENTRY_OVERHEAD_BYTES,
    MIB,
    FeatureCache,
    check_budget,
    default_min_free_bytes,
    directory_bytes,
    estimated_cache_bytes,
)

LOGGER = "allennlp_tune.modules.feature_cache.store"
REPO_ROOT = Path(__file__).resolve().parents[2]
CONFIGS = REPO_ROOT / "tests" / "fixtures_configs" / "embedders"
CONFIG = CONFIGS / "classifier_tune_transformer.jsonnet"
DATA = CONFIGS / "text_classification.jsonl"
EMBEDDER = "model.text_field_embedder.token_embedders.tokens"
BLOCK = os.statvfs("/").f_frsize if hasattr(os, "statvfs") else 4096
GIB = 2**30


def entry_files(directory: Path) -> List[Path]:
    return sorted(directory.rglob("*.f16"))


def file_bytes(directory: Path) -> int:
    return sum(path.stat().st_size for path in directory.rglob("*") if path.is_file())


def features(index: int, length: int = 10) -> torch.Tensor:
    return torch.linspace(-1, 1, 5 * length * 16).view(5, length, 16) * (index + 1)


def keys(count: int, first: str = "") -> List[str]:
    """Distinct keys, spread over sub-folders as real ones are, or all in the folder `first`."""
    if first:
        return [first + f"{index:062x}" for index in range(count)]
    return [hashlib.sha256(str(index).encode()).hexdigest() for index in range(count)]


# ---- the budget, entry by entry ------------------------------------------------------------


def test_a_tiny_disk_budget_is_never_exceeded_and_entries_past_it_are_recomputed(tmp_path):
    budget_mb = 10 * BLOCK / MIB
    cache = FeatureCache(tmp_path, memory_mb=0, disk_mb=budget_mb)
    names = keys(30)
    values = [features(index, length=5 + index) for index in range(30)]
    for key, value in zip(names, values):
        # `put` returns the float16 values whether or not the entry is written.
        assert torch.equal(cache.put(key, value), value.half().float())
        assert file_bytes(tmp_path) <= budget_mb * MIB
        assert directory_bytes(tmp_path) <= budget_mb * MIB

    written = [key for key in names if cache.path(key).is_file()]
    assert 0 < len(written) < len(names)
    # No-write past the budget: the entries cached are the first ones, and they stay.
    assert written == names[: len(written)]
    assert cache.stats()["writes"] == len(written)
    assert cache.stats()["not_written"] == len(names) - len(written)
    assert cache.stats()["disk_bytes_written"] <= budget_mb * MIB
    # What is not on disk is missing (the embedder computes it again); what is, is read.
    later = FeatureCache(tmp_path, memory_mb=0, disk_mb=budget_mb)
    for key, value in zip(names, values):
        read = later.get(key, value.shape)
        if key in written:
            assert torch.equal(read, value.half().float())
        else:
            assert read is None
    # Computing a missing entry again does not write it either: the folder stays as it was.
    before = file_bytes(tmp_path)
    later.put(names[-1], values[-1])
    assert file_bytes(tmp_path) == before and not later.path(names[-1]).exists()


def test_disk_mb_zero_writes_nothing_and_keeps_entries_in_memory(tmp_path):
    cache = FeatureCache(tmp_path / "cache", memory_mb=1, disk_mb=0)
    value = features(0)
    assert torch.equal(cache.put(keys(1)[0], value), value.half().float())
    assert not (tmp_path / "cache").exists()
    assert torch.equal(cache.get(keys(1)[0], value.shape), value.half().float())


def test_the_budget_counts_what_a_shared_folder_already_holds_and_reads_it(tmp_path):
    names = keys(12)
    first = FeatureCache(tmp_path, memory_mb=0)  # an earlier or concurrent run, unbounded
    for index, key in enumerate(names[:6]):
        first.put(key, features(index))
    held = directory_bytes(tmp_path)
    budget_mb = (held + 2 * BLOCK) / MIB  # room for about one more entry and its folder

    second = FeatureCache(tmp_path, memory_mb=0, disk_mb=budget_mb)
    for index, key in enumerate(names):
        if second.get(key, features(index).shape) is None:
            second.put(key, features(index))
    assert second.stats()["hits"] == 6  # reading existing entries is always fine
    assert second.stats()["writes"] <= 1 and second.stats()["not_written"] >= 5
    assert directory_bytes(tmp_path) <= budget_mb * MIB
    # The existing entries are untouched (nothing is evicted).
    assert all(second.path(key).is_file() for key in names[:6])


def test_the_budget_is_logged_once_with_what_is_cached(tmp_path, caplog):
    cache = FeatureCache(tmp_path, memory_mb=0, disk_mb=4 * BLOCK / MIB)
    cache._owner = "tune_transformer"
    with caplog.at_level(logging.INFO, logger=LOGGER):
        for index, key in enumerate(keys(20, first="ab")):
            cache.put(key, features(index))
    records = [record for record in caplog.records if record.name == LOGGER]
    assert len(records) == 1 and records[0].levelno == logging.WARNING
    message = records[0].getMessage()
    written = cache.stats()["writes"]
    assert 0 < written < 20
    assert f"{written} entries ({cache.bytes_written / MIB:.1f} MiB)" in message
    assert "recomputed every epoch" in message and "raise feature_cache.disk_mb" in message
    assert message.startswith("tune_transformer: ") and str(tmp_path) in message
    assert cache.stopped is not None


# ---- the free-space margin -----------------------------------------------------------------


def patch_free_space(monkeypatch, disk: Path, total: int, free_at_start: int) -> None:
    """A file system of `total` bytes whose free space shrinks by what the folder `disk` holds."""
    disk.mkdir(exist_ok=True)

    def disk_usage(path):
        free = free_at_start - directory_bytes(disk)
        return shutil._ntuple_diskusage(total, total - free, free)

    monkeypatch.setattr(shutil, "disk_usage", disk_usage)


def test_the_default_margin_is_honoured(tmp_path, monkeypatch, caplog):
    total = 100 * GIB  # the default margin is then 5% of it: 5 GiB, more than 2 GiB
    margin = default_min_free_bytes(total)
    assert margin == 5 * GIB
    directory = tmp_path / "disk" / "cache"
    patch_free_space(monkeypatch, directory.parent, total, free_at_start=margin + 8 * BLOCK)
    cache = FeatureCache(directory, memory_mb=0)  # no disk_mb: the margin alone bounds it
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        for index, key in enumerate(keys(20, first="ab")):
            cache.put(key, features(index))
            assert shutil.disk_usage(directory).free >= margin
    # The root and the "ab" folders take a block each, every entry one: 6 entries fit.
    assert len(entry_files(directory)) == 6 == cache.stats()["writes"]
    assert shutil.disk_usage(directory).free == margin
    assert len(caplog.records) == 1
    assert "max(2 GiB, 5% of the disk) = 5120" in caplog.text
    assert "min_free_mb" in caplog.text


def test_the_default_margin_is_2_gib_on_a_small_disk_and_min_free_mb_overrides_it(
    tmp_path, monkeypatch
):
    assert default_min_free_bytes(10 * GIB) == 2 * GIB
    directory = tmp_path / "disk" / "cache"
    patch_free_space(monkeypatch, directory.parent, 10 * GIB, free_at_start=2 * GIB + 4 * BLOCK)
    default = FeatureCache(directory, memory_mb=0)
    for index, key in enumerate(keys(10, first="ab")):
        default.put(key, features(index))
    assert default.stats()["writes"] == 2  # root and folder, then two entries

    other = tmp_path / "other_disk" / "cache"
    patch_free_space(monkeypatch, other.parent, 10 * GIB, free_at_start=2 * GIB + 4 * BLOCK)
    relaxed = FeatureCache.from_config(
        {"directory": str(other), "memory_mb": 0, "min_free_mb": 1024}, None, "owner"
    )
    for index, key in enumerate(keys(10, first="ab")):
        relaxed.put(key, features(index))
    assert relaxed.stats()["writes"] == 10


# ---- the configuration -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "config, match",
    [
        ({"disk_mb": -1}, r"feature_cache\.disk_mb is -1; give a number of MiB >= 0 or null"),
        ({"disk_mb": "10GB"}, r"feature_cache\.disk_mb is '10GB'; give a number"),
        ({"disk_mb": True}, r"feature_cache\.disk_mb is True; give a number"),
        ({"disk_mb": float("nan")}, r"feature_cache\.disk_mb is nan; give a number"),
        ({"min_free_mb": -5}, r"feature_cache\.min_free_mb is -5; give a number of MiB >= 0"),
        ({"min_free_mb": [1]}, r"feature_cache\.min_free_mb is \[1\]; .*max\(2 GiB, 5%"),
        ({"memory_mb": None}, r"feature_cache\.memory_mb is None; give a number of MiB >= 0 \("),
        (
            {"disk": 10},
            r"feature_cache has unknown key\(s\) \['disk'\]; the allowed keys are .*'disk_mb'",
        ),
        (["disk_mb"], r"feature_cache must be an object such as"),
    ],
)
def test_invalid_budget_settings_are_configuration_errors(config, match):
    with pytest.raises(ConfigurationError, match=r"^tune_transformer\." + match):
        FeatureCache.from_config(config, None, "tune_transformer")


def test_valid_budget_settings(tmp_path):
    cache = FeatureCache.from_config(
        {"directory": str(tmp_path), "disk_mb": 1.5, "min_free_mb": 0}, None, "owner"
    )
    assert cache.disk_budget_bytes == int(1.5 * MIB) and cache._min_free_bytes == 0
    unbounded = FeatureCache.from_config({"disk_mb": None, "min_free_mb": None}, None, "owner")
    assert unbounded.disk_budget_bytes is None and unbounded._min_free_bytes is None
    assert FeatureCache.from_config({"disk_mb": 0}, None, "owner").disk_budget_bytes == 0


# ---- the planner's estimate and check ------------------------------------------------------


def test_entry_headers_are_within_the_stated_bound(tmp_path):
    cache = FeatureCache(tmp_path, memory_mb=0)
    for index, shape in enumerate([(1, 1, 1), (7, 13, 384), (13, 512, 64)]):
        key = keys(3)[index]
        cache.put(key, torch.ones(shape))
        overhead = cache.path(key).stat().st_size - 2 * torch.Size(shape).numel()
        assert 150 < overhead <= ENTRY_HEADER_BYTES


def test_check_budget(tmp_path, monkeypatch):
    assert check_budget(10 * GIB, None, tmp_path) is None  # no cache
    patch_free_space(monkeypatch, tmp_path, 100 * GIB, free_at_start=50 * GIB)
    assert check_budget(1 * GIB, {}, tmp_path / "c") is None
    assert check_budget(1 * GIB, {"disk_mb": 1024}, tmp_path / "c") is None

    over = check_budget(3 * GIB, {"disk_mb": 1000}, tmp_path / "c")
    assert "feature_cache.disk_mb is 1000" in over
    assert "set feature_cache.disk_mb to at least 3072" in over
    assert "67% of the features would be recomputed every epoch" in over

    # 50 GiB free, 5 GiB kept free by the default margin: 45 GiB of room.
    full = check_budget(46 * GIB, {}, tmp_path / "c")
    assert f"{tmp_path / 'c'} has 51200 MiB free" in full
    assert "the default margin max(2 GiB, 5% of the disk) = 5120 MiB" in full
    assert "feature_cache.directory (or TUNE_FEATURE_CACHE_DIR)" in full
    assert "feature_cache.min_free_mb" in full
    assert check_budget(46 * GIB, {"min_free_mb": 0}, tmp_path / "c") is None
    both = check_budget(46 * GIB, {"disk_mb": 100}, tmp_path / "c")
    assert "feature_cache.disk_mb is 100" in both and "51200 MiB free" in both
    with pytest.raises(ConfigurationError, match="disk_mb"):
        check_budget(1, {"disk_mb": -2}, tmp_path)


# ---- through a real training run -----------------------------------------------------------


def train(monkeypatch, out: Path, cache: Dict) -> collections.Counter:
    """`allennlp train` of the fixture classifier with `cache`; counts the entries computed."""
    computed: collections.Counter = collections.Counter()
    put = FeatureCache.put

    def counting_put(self, key, value):
        computed[key] += 1
        return put(self, key, value)

    with monkeypatch.context() as patch:
        patch.setattr(FeatureCache, "put", counting_put)
        argv = ["allennlp", "train", str(CONFIG), "-s", str(out)]
        argv += ["--include-package", "allennlp_tune.modules"]
        argv += ["-o", json.dumps({f"{EMBEDDER}.feature_cache": cache})]
        patch.setattr(sys, "argv", argv)
        main(prog="allennlp")
    return computed


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory, models_dir):
    """The fixture classifier trained with an unbounded cache and with a tiny disk budget."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.chdir(REPO_ROOT)
        monkeypatch.setenv("TUNE_MODELS_DIR", str(models_dir))
        monkeypatch.delenv("TUNE_FEATURE_CACHE_DIR", raising=False)
        root = tmp_path_factory.mktemp("budget_runs")
        # memory_mb 0: an entry that is not on disk is computed again every time it is used.
        unbounded = train(monkeypatch, root / "unbounded", {"memory_mb": 0})
        budget_mb = 12 * BLOCK / MIB
        bounded = train(monkeypatch, root / "bounded", {"memory_mb": 0, "disk_mb": budget_mb})
    return {"root": root, "budget_mb": budget_mb, "unbounded": unbounded, "bounded": bounded}


def test_a_run_with_a_tiny_budget_trains_the_same_weights(two_runs):
    root = two_runs["root"]
    unbounded_cache = root / "unbounded" / "feature_cache"
    bounded_cache = root / "bounded" / "feature_cache"
    # 12 distinct sentences, computed once each and read afterwards.
    assert len(entry_files(unbounded_cache)) == 12
    assert set(two_runs["unbounded"].values()) == {1}
    # With the budget, some are cached and the rest computed again on every use: 2 epochs of
    # training and validation on the same file.
    written = {path.stem for path in entry_files(bounded_cache)}
    assert 0 < len(written) < 12
    assert file_bytes(bounded_cache) <= two_runs["budget_mb"] * MIB
    assert directory_bytes(bounded_cache) <= two_runs["budget_mb"] * MIB
    assert set(two_runs["bounded"]) == set(two_runs["unbounded"])
    for key, count in two_runs["bounded"].items():
        assert count == (1 if key in written else 4), key

    trained = torch.load(root / "unbounded" / "best.th", map_location="cpu")
    with_budget = torch.load(root / "bounded" / "best.th", map_location="cpu")
    assert trained.keys() == with_budget.keys()
    assert all(torch.equal(trained[name], with_budget[name]) for name in trained)
    metrics = json.loads((root / "unbounded" / "metrics.json").read_text())
    metrics_with_budget = json.loads((root / "bounded" / "metrics.json").read_text())
    for name in ("training_loss", "validation_loss", "validation_accuracy"):
        assert metrics[name] == metrics_with_budget[name]


def test_the_estimate_matches_a_fixture_cache(two_runs, models_dir):
    cache = two_runs["root"] / "unbounded" / "feature_cache"
    model = models_dir / "bert-cased"
    config = json.loads((model / "config.json").read_text())
    tokenizer = PretrainedTransformerTokenizer(str(model))
    texts = {json.loads(line)["text"] for line in DATA.read_text().splitlines()}
    wordpieces = sum(len(tokenizer.tokenize(text)) for text in texts)  # with [CLS] and [SEP]
    layers, dim = config["num_hidden_layers"] + 1, config["hidden_size"]  # layers: "all"
    files = entry_files(cache)
    assert len(files) == len(texts) == 12

    payload = estimated_cache_bytes(wordpieces, layers, dim)
    assert payload == wordpieces * layers * dim * 2
    sizes = sum(path.stat().st_size for path in files)
    assert 0 < sizes - payload <= len(files) * ENTRY_HEADER_BYTES
    # On disk each file also rounds up to whole blocks: within one header and block per entry.
    allocated = sum(path.stat().st_blocks * 512 for path in files)
    assert payload <= allocated <= payload + len(files) * (ENTRY_HEADER_BYTES + BLOCK)
    # The average overhead is a fair middle of that range.
    estimate = estimated_cache_bytes(wordpieces, layers, dim, num_entries=len(files))
    assert estimate == payload + len(files) * ENTRY_OVERHEAD_BYTES
    assert abs(allocated - estimate) <= len(files) * BLOCK
