"""`FeatureCache`: float16 entries on disk, checked on every read, written atomically."""

import io
import logging
import os
from pathlib import Path

import pytest
import torch
import transformers
from allennlp.common.checks import ConfigurationError

from allennlp_tune.modules import feature_cache
from allennlp_tune.modules.feature_cache import (
    CACHE_DIR_ENV,
    FeatureCache,
    default_cache_directory,
    encoder_fingerprint,
)

LOGGER = "allennlp_tune.modules.feature_cache.store"
KEY = "ab" + "0" * 62
SHAPE = (3, 5, 4)


def stored(tmp_path: Path, memory_mb: float = 0) -> FeatureCache:
    cache = FeatureCache(tmp_path, memory_mb=memory_mb)
    cache.put(KEY, torch.linspace(-3, 3, 60).view(SHAPE))
    return cache


def test_round_trip_in_float16(tmp_path):
    value = torch.randn(SHAPE)
    cache = FeatureCache(tmp_path, memory_mb=0)
    cache.put(KEY, value)
    assert cache.path(KEY).is_file()
    read = FeatureCache(tmp_path).get(KEY, SHAPE)
    assert torch.equal(read, value.half().float())
    payload = cache.path(KEY).read_bytes()[-2 * value.numel() :]
    assert payload == value.half().numpy().tobytes()  # float16 on disk
    assert FeatureCache(tmp_path).get("cd" + "0" * 62, SHAPE) is None


def damage_truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-7])


def damage_flip_payload_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF
    path.write_bytes(bytes(data))


def damage_garbage(path: Path) -> None:
    path.write_bytes(b"not a cache entry at all")


def damage_header(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[12] = ord("x")  # the opening brace of the JSON header
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "damage,reason",
    [
        (damage_truncate, "truncated"),
        (damage_flip_payload_byte, "checksum"),
        (damage_garbage, "not a feature cache file"),
        (damage_header, "header"),
    ],
)
def test_a_damaged_entry_is_logged_deleted_and_reported_missing(tmp_path, caplog, damage, reason):
    path = stored(tmp_path).path(KEY)
    damage(path)
    cache = FeatureCache(tmp_path)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert cache.get(KEY, SHAPE) is None
    assert str(path) in caplog.text and reason in caplog.text
    assert cache.rejected == 1 and not path.exists()


def test_an_entry_under_another_name_or_of_another_shape_is_not_used(tmp_path, caplog):
    path = stored(tmp_path).path(KEY)
    other = "ab" + "1" * 62
    os.replace(path, FeatureCache(tmp_path).path(other))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert FeatureCache(tmp_path).get(other, SHAPE) is None
    assert "holds key" in caplog.text

    stored(tmp_path)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert FeatureCache(tmp_path).get(KEY, (3, 6, 4)) is None
    assert "shape" in caplog.text


class CountingFileIO(io.FileIO):
    """A raw file that counts the bytes read from it (what the buffered reader asks for)."""

    bytes_read = 0

    def readinto(self, buffer) -> int:
        read = super().readinto(buffer) or 0
        CountingFileIO.bytes_read += read
        return read

    def readall(self) -> bytes:
        data = super().readall()
        CountingFileIO.bytes_read += len(data)
        return data


def junk(cache: FeatureCache, size: int) -> Path:
    path = cache.directory / "junk"
    path.write_bytes(b"junk!" * (size // 5 + 1))
    return path


def foreign_entry(cache: FeatureCache, size: int) -> Path:
    """A well-formed entry of another key and shape, with a large payload."""
    other = "cd" + "0" * 62
    cache.put(other, torch.zeros(size // (2 * 4 * 5) + 1, 5, 4))
    return cache.path(other)


@pytest.mark.parametrize("write", [junk, foreign_entry])
def test_a_large_foreign_file_is_rejected_from_its_header(tmp_path, monkeypatch, write):
    # Anything can sit at a cache path: it must be rejected before it is read (or held) whole.
    size = 16 * 2**20
    cache = FeatureCache(tmp_path, memory_mb=0)
    path = cache.path(KEY)
    path.parent.mkdir(parents=True)
    os.replace(write(cache, size), path)
    assert path.stat().st_size >= size
    monkeypatch.setattr(CountingFileIO, "bytes_read", 0)
    opened = []

    def counting_open(file, mode="r", *args, **kwargs):
        assert mode == "rb"
        opened.append(file)
        return io.BufferedReader(CountingFileIO(file, "r"))

    monkeypatch.setattr(feature_cache.store, "open", counting_open, raising=False)
    assert cache.get(KEY, SHAPE) is None
    assert opened == [path]
    assert cache.rejected == 1 and not path.exists()
    assert CountingFileIO.bytes_read <= 128 * 1024


def test_a_failed_write_leaves_no_entry_and_no_partial_file(tmp_path, caplog, monkeypatch):
    def killed(*args):
        raise OSError("killed mid-write")

    monkeypatch.setattr(os, "replace", killed)
    cache = FeatureCache(tmp_path, memory_mb=1)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        cache.put(KEY, torch.ones(SHAPE))
        cache.put("cd" + "0" * 62, torch.ones(SHAPE))
    assert len(caplog.records) == 1 and "killed mid-write" in caplog.text
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []
    assert cache.get(KEY, SHAPE) is not None  # still served from memory


def test_leftover_partial_files_are_never_read(tmp_path):
    cache = FeatureCache(tmp_path)
    partial = cache.path(KEY).parent / ".tmp-123.part"
    partial.parent.mkdir(parents=True)
    partial.write_bytes(b"half an entry")
    assert cache.get(KEY, SHAPE) is None and cache.rejected == 0


def test_memory_stays_within_its_budget(tmp_path):
    entry = torch.zeros(256, 1024)  # 0.5 MiB on disk, 1 MiB in memory (float32)
    cache = FeatureCache(tmp_path, memory_mb=2)
    for index in range(10):
        cache.put(f"{index:064x}", entry)
    assert cache.stats()["memory_entries"] == 2
    assert cache.stats()["memory_bytes"] <= 2 * 2**20
    assert cache.get(f"{0:064x}", entry.shape) is not None  # evicted, read back from disk
    assert cache.stats()["hits"] == 1


def test_default_directory(tmp_path, monkeypatch):
    monkeypatch.delenv(CACHE_DIR_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_directory() == tmp_path / "xdg" / "allennlp_tune" / "features"
    run = tmp_path / "run"
    run.mkdir()
    assert default_cache_directory(str(run)) == run / "feature_cache"
    # A serialization dir that is gone (load_archive's extraction folder) is not recreated.
    gone = FeatureCache.from_config({}, str(tmp_path / "extracted"), "owner")
    assert gone.directory == tmp_path / "xdg" / "allennlp_tune" / "features"
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "shared"))
    assert default_cache_directory(str(run)) == tmp_path / "shared"
    explicit = FeatureCache.from_config({"directory": str(tmp_path / "x")}, str(run), "owner")
    assert explicit.directory == tmp_path / "x"
    with pytest.raises(ConfigurationError, match="memory_mb"):
        FeatureCache.from_config({"memory_mb": -1}, None, "owner")


def test_fingerprint_covers_every_weight_and_the_identity():
    module = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.LayerNorm(3))
    reference = encoder_fingerprint(module, "identity")
    assert encoder_fingerprint(module, "identity") == reference
    assert encoder_fingerprint(module, "other identity") != reference
    with torch.no_grad():
        module[1].bias[0] += 1e-3
    assert encoder_fingerprint(module, "identity") != reference


def test_fingerprint_covers_the_transformers_version(monkeypatch):
    module = torch.nn.Linear(3, 3)
    reference = encoder_fingerprint(module, "identity")
    monkeypatch.setattr(transformers, "__version__", "999.0.0")
    assert encoder_fingerprint(module, "identity") != reference


def test_weights_loaded_after_features_were_cached_give_fresh_features(
    bert_path, wordpiece_batch, tmp_path
):
    from allennlp_tune.modules.token_embedders.tune_transformer import TuneTransformerEmbedder

    tensors = wordpiece_batch()
    embedder = TuneTransformerEmbedder(bert_path, feature_cache={"directory": str(tmp_path)})
    embedder.eval()(**tensors)  # fingerprints the weights and caches every sequence
    cache = embedder.feature_cache
    first_writes = cache.writes
    assert first_writes == len(tensors["token_ids"]) and cache.hits == 0

    # As `load_archive` or a trainer restoring its best weights does, on the same embedder.
    state = embedder.state_dict()
    weight = embedder.layer_groups()[-1][1][0][0]
    state[weight] = state[weight] + 0.05
    reference = TuneTransformerEmbedder(bert_path).eval()
    reference.load_state_dict(state)
    embedder.load_state_dict(state)

    output = embedder(**tensors)
    assert cache.hits == 0 and cache.writes == 2 * first_writes  # new keys, nothing stale
    mask = tensors["mask"].unsqueeze(-1).expand_as(output)
    torch.testing.assert_close(output[mask], reference(**tensors)[mask], atol=1e-2, rtol=1e-2)
