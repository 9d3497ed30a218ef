"""
The on-disk cache of frozen-encoder features used by the `tune_*` token embedders.

Not a registered component: the embedders build one from their `feature_cache` parameter
(see `FeatureCache.from_config`). What it guarantees:

- **One entry per sequence.** An entry holds the selected layers of one input sequence with
  its padding stripped, `(num_layers, sequence_length, dim)`, so a sentence hits the same entry
  whatever batch it is in and however much that batch is padded.
- **Keyed by content.** `FeatureCache.key` hashes a fingerprint of the encoder (its class, its
  configuration, the `transformers` version and the bytes of every weight, see
  `encoder_fingerprint`), the layer selection, folding length, and the exact input ids of the
  sequence. Another model, other weights (a fine-tuned archive, a perturbed copy, weights
  loaded into the embedder), another `transformers`, another layer selection or another text
  gets another key, so it can never read a stale entry.
- **float16 on disk**, one file per entry under `<directory>/<key[:2]>/<key>.f16`: an 8-byte
  magic, a 4-byte header length, a JSON header (format version, key, dtype, shape, byte count,
  CRC-32 of the payload) and the raw float16 payload.
- **Atomic writes.** An entry is written to a temporary file in the same folder and moved into
  place with `os.replace`, so a killed run leaves either the whole entry or none of it
  (possibly a `.tmp-*.part` file, which is never read). No `fsync`: a power cut can still leave
  a damaged file, which the next check catches.
- **Checked reads.** A truncated, corrupted, renamed or otherwise mismatched entry (wrong magic,
  header, key, shape, size or checksum) is logged as a WARNING naming the file, deleted and
  recomputed; it is never used. The magic and header are checked before the payload is read,
  so a large foreign file at a cache path costs a few bytes of reading, not its size in RAM.
- **Bounded RAM.** Entries read or written recently are also kept in an in-memory LRU bounded by
  `memory_mb`; nothing else is held in memory. The LRU holds them as float32 (the float16
  values, converted once), so that a cached epoch does no conversion: twice the bytes of the
  disk entry count against the budget.
- **Only what is mixed.** An entry holds the layers the embedder's `layers` selects, no
  others (`tune_transformer` stacks `hidden_states[i]` for the selected `i` before it caches
  them, `tune_elmo` the selected activations), and the selection is part of the key:
  `layers: "top"` stores one layer, `"all"` of MiniLM seven. Choosing fewer layers is the one
  setting that shrinks the store without changing what the selected layers give.
- **Bounded disk.** Writing stops (for the rest of the run) before an entry would take the
  folder past `disk_mb`, or the folder's file system below `min_free_mb` of free space. Entries
  that are not written are computed as if there were no cache, every epoch (through float16
  exactly like a cached entry, so results are identical whatever is cached; only the time
  differs); entries already on disk are still read, including those written by other runs
  sharing the folder. One WARNING, when writing first stops, says how much is cached and names
  the setting to change. See "The disk budget" below.
- **About `2 * layers * wordpieces * dim` bytes per sequence** on disk (71 MiB for 500 SICK
  pairs with MiniLM's 7 layers), plus a header of about 180 bytes and the file system's
  rounding to its block size per entry: `estimated_cache_bytes` gives the size of a data set's
  cache and `check_budget` says before a run whether it fits. Delete the folder to reclaim it;
  the default folder inside the serialization directory goes with the run.

The `feature_cache` parameter and the disk budget: `budget.py`; where the folder is:
`location.py`.
"""

import hashlib
import json
import logging
import os
import shutil
import struct
import tempfile
import zlib
from collections import OrderedDict
from pathlib import Path
from typing import Any, BinaryIO, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy
import torch
import transformers

from allennlp_tune.modules.feature_cache.budget import (
    DEFAULT_BLOCK_BYTES,
    MIB,
    check_config,
    default_min_free_bytes,
    directory_bytes,
    existing_ancestor,
)
from allennlp_tune.modules.feature_cache.location import CACHE_DIR_ENV, default_cache_directory

logger = logging.getLogger(__name__)

CACHE_FORMAT_VERSION = 1
MAGIC = b"ATUNEFC1"
_HEADER_LENGTH = struct.Struct("<I")
# Headers are a few hundred bytes; a larger length means the file is not an entry.
_MAX_HEADER_BYTES = 64 * 1024


def encoder_fingerprint(
    module: torch.nn.Module, identity: str, keep: Optional[Callable[[str], bool]] = None
) -> str:
    """
    A SHA-256 over `identity` (the encoder's class and configuration), the installed
    `transformers` version and the name, dtype, shape and bytes of every tensor in
    `module.state_dict()` (of those whose name `keep` accepts, when given: a block mode's cache
    of the frozen groups below its block covers their weights only, as the block's change at
    every step). Computed once per frozen phase (it reads every weight once: well under a
    second for a BERT-base).
    """
    digest = hashlib.sha256(identity.encode("utf-8"))
    # The same weights can give other features under another release of the modelling code
    # (attention implementation, layer norm or activation changes): a shared cache must not
    # serve features computed by an older or newer `transformers`.
    digest.update(f"|transformers {transformers.__version__}".encode())
    for name, tensor in module.state_dict().items():
        if keep is not None and not keep(name):
            continue
        tensor = tensor.detach().cpu().contiguous().reshape(-1)
        digest.update(f"|{name}|{tensor.dtype}|{tensor.numel()}|".encode())
        if tensor.numel():
            digest.update(tensor.view(torch.uint8).numpy().data)
    return digest.hexdigest()


class FeatureCache:
    """
    A disk cache of float16 feature tensors with a bounded in-memory LRU in front of it, and a
    disk budget past which entries are not written (see the module docstring).

    # Parameters

    directory : `Union[str, Path]`, optional (default = `None`)
        Root folder of the entries; created on the first write. `None`: chosen by
        `default_cache_directory(serialization_dir)` when the cache is first used.
    memory_mb : `float`, optional (default = `256`)
        Budget of the in-memory LRU in MiB (0 disables it: every hit reads the disk).
    serialization_dir : `str`, optional (default = `None`)
        The run's serialization directory, for the default location.
    disk_mb : `float`, optional (default = `None`)
        The most MiB the folder may hold (what it held at this cache's first write plus what
        this cache writes); `None` for no limit other than `min_free_mb`.
    min_free_mb : `float`, optional (default = `None`)
        Never write an entry that leaves less than this many MiB free on the folder's file
        system; `None` for `default_min_free_bytes` (max(2 GiB, 5% of the file system)).
    """

    def __init__(
        self,
        directory: Optional[Union[str, Path]] = None,
        memory_mb: float = 256,
        serialization_dir: Optional[str] = None,
        disk_mb: Optional[float] = None,
        min_free_mb: Optional[float] = None,
    ) -> None:
        self._directory = Path(directory).expanduser() if directory else None
        self._serialization_dir = serialization_dir
        self.memory_bytes = int(memory_mb * MIB)
        self.disk_budget_bytes = None if disk_mb is None else int(disk_mb * MIB)
        self._min_free_bytes = None if min_free_mb is None else int(min_free_mb * MIB)
        # The folder's allocated bytes at the first write (measured once, with disk_mb only).
        self._disk_at_start: Optional[int] = None
        self._block_bytes: Optional[int] = None
        # Why writing stopped (the budget was hit), or None while entries are written.
        self._stopped: Optional[str] = None
        self.bytes_written = 0  # allocated bytes of this cache's writes (files and folders)
        self.not_written = 0
        self._memory: OrderedDict[str, torch.Tensor] = OrderedDict()
        self._memory_used = 0
        self._write_failed = False
        self._owner = "feature_cache"
        self.hits = 0
        self.misses = 0
        self.rejected = 0
        self.writes = 0

    @classmethod
    def from_config(
        cls, config: Dict[str, Any], serialization_dir: Optional[str], owner: str
    ) -> "FeatureCache":
        """
        Builds the cache from an embedder's `feature_cache` parameter, checking its keys (listed
        in the module docstring).
        """
        checked = check_config(config, owner)
        cache = cls(
            checked["directory"],
            memory_mb=checked["memory_mb"],
            serialization_dir=serialization_dir,
            disk_mb=checked["disk_mb"],
            min_free_mb=checked["min_free_mb"],
        )
        cache._owner = owner
        return cache

    @property
    def directory(self) -> Path:
        """The root folder, resolved on first use (see `default_cache_directory`)."""
        if self._directory is None:
            self._directory = default_cache_directory(self._serialization_dir)
            logger.info("%s: frozen features are cached in %s", self._owner, self._directory)
        return self._directory

    @staticmethod
    def key_prefix(fingerprint: str, selection: str) -> "hashlib._Hash":
        """The hash state shared by every key of one encoder and layer selection."""
        return hashlib.sha256(f"v{CACHE_FORMAT_VERSION}|{fingerprint}|{selection}".encode())

    @staticmethod
    def key(prefix: "hashlib._Hash", *arrays: Optional[numpy.ndarray]) -> str:
        """The key of one sequence: `prefix` extended with the given id arrays."""
        digest = prefix.copy()
        for array in arrays:
            if array is None:
                digest.update(b"|-")
            else:
                array = numpy.ascontiguousarray(array, dtype=numpy.int64)
                digest.update(f"|{array.shape}|".encode())
                digest.update(array.data)
        return digest.hexdigest()

    def path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.f16"

    def get(self, key: str, shape: Sequence[int]) -> Optional[torch.Tensor]:
        """
        The CPU tensor stored under `key` (float32 holding the stored float16 values), or `None`
        when there is no usable entry. An
        entry whose shape is not `shape`, or that fails any check, is logged, deleted and
        reported as missing.
        """
        shape = tuple(int(size) for size in shape)
        tensor = self._memory.get(key)
        if tensor is not None and tuple(tensor.shape) == shape:
            self._memory.move_to_end(key)
            self.hits += 1
            return tensor
        path = self.path(key)
        try:
            with open(path, "rb") as file:
                tensor, problem = self._read(file, key, shape)
        except FileNotFoundError:
            self.misses += 1
            return None
        except OSError as error:
            logger.warning(
                "Feature cache entry %s cannot be read (%s); recomputing it.", path, error
            )
            self.misses += 1
            return None
        if tensor is None:
            self.rejected += 1
            self.misses += 1
            logger.warning(
                "Feature cache entry %s is unusable (%s); it is ignored, deleted and recomputed.",
                path,
                problem,
            )
            try:
                path.unlink()
            except OSError:
                pass
            return None
        self.hits += 1
        self._remember(key, tensor)
        return tensor

    def put(self, key: str, features: Union[torch.Tensor, numpy.ndarray]) -> torch.Tensor:
        """
        Stores `features` as float16 under `key` and returns what `get` will return for it: the
        stored values as a float32 CPU tensor (also when the disk budget keeps the entry from
        being written: then it is only in the memory LRU, and computed again once evicted).
        Callers storing many rows of one batch should convert the batch to a float16 numpy
        array once and pass its slices (numpy works on one thread: per-row torch conversions
        each start a parallel region, which costs more).
        """
        if isinstance(features, torch.Tensor):
            features = features.detach().to(device="cpu", dtype=torch.float16).numpy()
        array = numpy.ascontiguousarray(features, dtype=numpy.float16)
        tensor = torch.from_numpy(array.astype(numpy.float32))
        self._remember(key, tensor)
        if self._stopped is None:
            self._write(key, array)
        else:
            self.not_written += 1
        return tensor

    def _write(self, key: str, array: numpy.ndarray) -> None:
        """Writes one entry atomically, unless it would not fit the disk budget."""
        payload = array.tobytes()
        header = json.dumps(
            {
                "version": CACHE_FORMAT_VERSION,
                "key": key,
                "dtype": "float16",
                "shape": list(array.shape),
                "nbytes": len(payload),
                "crc32": zlib.crc32(payload),
            }
        ).encode("utf-8")
        path = self.path(key)
        data = MAGIC + _HEADER_LENGTH.pack(len(header)) + header + payload
        temporary = None
        try:
            size = self._allocation(path, len(data))
            if not self._fits(size):
                self.not_written += 1
                return
            path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".part")
            with os.fdopen(handle, "wb") as file:
                file.write(data)
            os.replace(temporary, path)
            temporary = None
            self.writes += 1
            self.bytes_written += size
        except OSError as error:
            if not self._write_failed:
                logger.warning(
                    "Cannot write feature cache entry %s (%s); features are kept in memory only "
                    "(set feature_cache.directory to a writable folder).",
                    path,
                    error,
                )
                self._write_failed = True
        finally:
            if temporary is not None:
                try:
                    os.unlink(temporary)
                except OSError:
                    pass

    # ---- the disk budget ---------------------------------------------------------------------

    def _allocation(self, path: Path, num_bytes: int) -> int:
        """
        The disk space that writing `num_bytes` to the new file `path` takes: the file rounded
        up to the file system's fragment size, and one such block per folder to create.
        """
        if self._block_bytes is None:
            statvfs = getattr(os, "statvfs", None)
            block = 0
            if statvfs is not None:
                try:
                    block = statvfs(existing_ancestor(self.directory)).f_frsize
                except OSError:
                    pass
            self._block_bytes = block if block > 0 else DEFAULT_BLOCK_BYTES
        block = self._block_bytes
        folders = 0
        if not path.parent.is_dir():
            folders = 1 if self.directory.is_dir() else 2
        return -(-num_bytes // block) * block + folders * block

    def _fits(self, size: int) -> bool:
        """
        Whether `size` more bytes keep the folder within `disk_mb` and its file system above
        the free margin; when they do not, writing stops for the rest of the run, logged once.
        """
        if self.disk_budget_bytes is not None:
            if self._disk_at_start is None:
                self._disk_at_start = directory_bytes(self.directory)
            used = self._disk_at_start + self.bytes_written
            if used + size > self.disk_budget_bytes:
                self._stop(
                    f"feature_cache.disk_mb is {self.disk_budget_bytes / MIB:g} and the folder "
                    f"holds {used / MIB:.1f} MiB",
                    "raise feature_cache.disk_mb",
                )
                return False
        usage = shutil.disk_usage(existing_ancestor(self.directory))
        if self._min_free_bytes is None:
            margin = default_min_free_bytes(usage.total)
            margin_setting = f"the default margin, max(2 GiB, 5% of the disk) = {margin / MIB:.0f}"
        else:
            margin = self._min_free_bytes
            margin_setting = f"feature_cache.min_free_mb = {margin / MIB:g}"
        if usage.free - size < margin:
            self._stop(
                f"{usage.free / MIB:.0f} MiB are free on its disk and the cache leaves "
                f"{margin_setting} MiB free",
                "free disk space, point feature_cache.directory (or "
                f"{CACHE_DIR_ENV}) at a larger disk, or lower feature_cache.min_free_mb",
            )
            return False
        return True

    def _stop(self, reason: str, fix: str) -> None:
        self._stopped = reason
        logger.warning(
            "%s: the feature cache in %s is full (%s): %d entries (%.1f MiB) were written by this "
            "run and stay cached; from now on entries are not written, and the features not "
            "cached are recomputed every epoch unless the memory LRU still holds them (same "
            "results, more time). To cache more, %s.",
            self._owner,
            self.directory,
            reason,
            self.writes,
            self.bytes_written / MIB,
            fix,
        )

    @property
    def stopped(self) -> Optional[str]:
        """Why entries are no longer written (the budget was hit, or `read_only`), or `None`."""
        return self._stopped

    def read_only(self, reason: str) -> None:
        """
        From now on, entries are read but not written (the memory LRU still holds what is
        computed), silently: for a one-off pass whose features no later run will ask for.
        """
        if self._stopped is None:
            self._stopped = reason

    def stats(self) -> Dict[str, int]:
        return {
            "hits": self.hits,
            "misses": self.misses,
            "rejected": self.rejected,
            "writes": self.writes,
            "not_written": self.not_written,
            "disk_bytes_written": self.bytes_written,
            "memory_entries": len(self._memory),
            "memory_bytes": self._memory_used,
        }

    def clear_memory(self) -> None:
        self._memory.clear()
        self._memory_used = 0

    def _remember(self, key: str, tensor: torch.Tensor) -> None:
        size = tensor.numel() * tensor.element_size()
        if size > self.memory_bytes:
            return
        old = self._memory.pop(key, None)
        if old is not None:
            self._memory_used -= old.numel() * old.element_size()
        self._memory[key] = tensor
        self._memory_used += size
        while self._memory_used > self.memory_bytes:
            _, evicted = self._memory.popitem(last=False)
            self._memory_used -= evicted.numel() * evicted.element_size()

    @staticmethod
    def _read(
        file: BinaryIO, key: str, shape: Tuple[int, ...]
    ) -> Tuple[Optional[torch.Tensor], str]:
        """
        Reads and checks one entry from `file`: the magic and header first, so that a file that
        is not an entry, or not the expected one, is rejected after reading a few bytes (not
        read whole: anything can be at a cache path); then exactly the expected payload, into
        the one buffer that the returned tensor is converted from.
        """
        fixed = len(MAGIC) + _HEADER_LENGTH.size
        start = file.read(fixed)
        if len(start) < fixed or start[: len(MAGIC)] != MAGIC:
            return None, "not a feature cache file or truncated header"
        (header_length,) = _HEADER_LENGTH.unpack_from(start, len(MAGIC))
        if header_length > _MAX_HEADER_BYTES:
            return None, f"unreadable header (of {header_length} bytes)"
        header_bytes = file.read(header_length)
        if len(header_bytes) < header_length:
            return None, "truncated header"
        try:
            header = json.loads(header_bytes.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return None, "unreadable header"
        if not isinstance(header, dict) or header.get("version") != CACHE_FORMAT_VERSION:
            return None, "unknown format version"
        if header.get("key") != key:
            return None, f"it holds key {header.get('key')!r}"
        stored_shape = header.get("shape")
        if (
            header.get("dtype") != "float16"
            or not isinstance(stored_shape, list)
            or tuple(stored_shape) != shape
        ):
            return None, f"shape {header.get('shape')} differs from the expected {list(shape)}"
        expected_bytes = 2 * int(numpy.prod(shape, dtype=numpy.int64))
        payload_bytes = os.fstat(file.fileno()).st_size - fixed - header_length
        if header.get("nbytes") != expected_bytes or payload_bytes != expected_bytes:
            return None, (
                f"truncated or padded payload: {payload_bytes} bytes, expected {expected_bytes}"
            )
        buffer = bytearray(expected_bytes)
        read = file.readinto(buffer)
        if read != expected_bytes:  # the file shrank while we read it
            return None, f"truncated payload: {read} bytes, expected {expected_bytes}"
        if zlib.crc32(buffer) != header.get("crc32"):
            return None, "checksum mismatch"
        array = numpy.frombuffer(buffer, dtype=numpy.float16)
        return torch.from_numpy(array.reshape(shape).astype(numpy.float32)), ""


def row_keys(
    prefix: Any,
    token_ids: torch.LongTensor,
    type_ids: Optional[torch.LongTensor],
    lengths: List[int],
) -> List[str]:
    """
    The cache key of each row: `prefix` with its ids up to its own `lengths[row]` (and its type
    ids, unless all zero), so padding and batch composition do not matter.

    # Parameters

    token_ids : `torch.LongTensor`
        Shape: `(batch_size, num_wordpieces)`.
    type_ids : `torch.LongTensor`, optional
        Shape: `(batch_size, num_wordpieces)`.
    """
    ids = token_ids.cpu().numpy()
    types = type_ids.cpu().numpy() if type_ids is not None else None
    keys = []
    for row, length in enumerate(lengths):
        row_types = types[row, :length] if types is not None else None
        if row_types is not None and not row_types.any():
            row_types = None
        keys.append(FeatureCache.key(prefix, ids[row, :length], row_types))
    return keys
