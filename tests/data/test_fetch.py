"""`allennlp_tune.data.fetch` and `allennlp tune-data` against a local HTTP server serving copies
of the fixture files (never the internet): checksums, resume, 404, offline, CoNLL-2003."""

import copy
import dataclasses
import hashlib
import http.server
import io
import socket
import threading
import zipfile
from pathlib import Path
from typing import Dict, List

import pytest
from allennlp.common import Params
from allennlp.data import DatasetReader

import allennlp_tune  # noqa: F401  (registers the readers)
from allennlp_tune.data import fetch
from allennlp_tune.data.paths import FIXTURE_DATA_DIR

SICK_TEXT = (FIXTURE_DATA_DIR / "sick" / "SICK.txt").read_bytes()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def zipped(members: Dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


SICK_ZIP = zipped({"SICK.txt": SICK_TEXT, "readme.txt": b"SICK\n"})
SST_TRAIN = (FIXTURE_DATA_DIR / "sst-2" / "train.tsv").read_bytes()
SST_DEV = (FIXTURE_DATA_DIR / "sst-2" / "dev.tsv").read_bytes()
SST_ZIP = zipped({"SST-2/train.tsv": SST_TRAIN, "SST-2/dev.tsv": SST_DEV, "SST-2/test.tsv": b"x"})


class Server:
    """Serves `files` by name, honours `Range`, and cuts the first response of the names in
    `truncate_once` after half its bytes (with the full Content-Length announced)."""

    def __init__(self, files: Dict[str, bytes]):
        self.files = files
        self.truncate_once: set = set()
        self.requests: List[tuple] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                name = self.path.lstrip("/")
                server.requests.append((name, self.headers.get("Range")))
                if name not in server.files:
                    self.send_error(404)
                    return
                data = server.files[name]
                start = 0
                if self.headers.get("Range"):
                    start = int(self.headers["Range"].split("=")[1].split("-")[0])
                    if start >= len(data):
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{len(data)}")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                else:
                    self.send_response(200)
                body = data[start:]
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if name in server.truncate_once:
                    server.truncate_once.discard(name)
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.wfile.write(body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    with Server({"SICK.zip": SICK_ZIP, "SST-2.zip": SST_ZIP}) as running:
        yield running


def sick(zip_digest=None, text_digest=None) -> fetch.Dataset:
    """The real SICK entry with the fixture copies' digests."""
    dataset = fetch.DATASETS["sick"]
    return dataclasses.replace(
        dataset,
        downloads=(
            dataclasses.replace(dataset.downloads[0], sha256=zip_digest or sha256(SICK_ZIP)),
        ),
        targets=(dataclasses.replace(dataset.targets[0], sha256=text_digest or sha256(SICK_TEXT)),),
    )


def leftovers(data_dir: Path) -> List[str]:
    return sorted(
        str(path.relative_to(data_dir))
        for path in data_dir.rglob("*")
        if ".part" in path.name or ".tmp-" in path.name
    )


def test_fetch_from_mirror_checks_sha256_and_installs_atomically(server, tmp_path):
    log = io.StringIO()
    installed = fetch.fetch_dataset(sick(), tmp_path, mirror=server.url, progress=False, log=log)
    assert installed == [tmp_path / "sick" / "SICK.txt"]
    assert (tmp_path / "sick" / "SICK.txt").read_bytes() == SICK_TEXT
    assert leftovers(tmp_path) == [] and not (tmp_path / ".downloads").exists()
    assert server.requests == [("SICK.zip", None)]
    assert "unverified" not in log.getvalue()
    # Present now: a second fetch downloads nothing.
    assert fetch.fetch_dataset(sick(), tmp_path, mirror=server.url, log=log) == []
    assert len(server.requests) == 1 and "sick: present" in log.getvalue()


def test_a_file_without_recorded_sha256_installs_with_an_unverified_line(server, tmp_path):
    assert fetch.DATASETS["sick"].targets[0].sha256 is None
    log = io.StringIO()
    fetch.fetch_dataset(fetch.DATASETS["sick"], tmp_path, mirror=server.url, log=log)
    assert (tmp_path / "sick" / "SICK.txt").read_bytes() == SICK_TEXT
    assert f"unverified: sick/SICK.txt has no recorded sha256 (this copy: {sha256(SICK_TEXT)})" in (
        log.getvalue()
    )


def test_members_of_a_glue_archive_go_where_the_configs_read_them(server, tmp_path):
    dataset = fetch.DATASETS["sst-2"]
    dataset = dataclasses.replace(
        dataset,
        downloads=(dataclasses.replace(dataset.downloads[0], sha256=sha256(SST_ZIP)),),
        targets=tuple(
            dataclasses.replace(target, sha256=sha256(data))
            for target, data in zip(dataset.targets, (SST_TRAIN, SST_DEV))
        ),
    )
    fetch.fetch_dataset(dataset, tmp_path, mirror=server.url, log=io.StringIO())
    assert (tmp_path / "sst-2" / "train.tsv").read_bytes() == SST_TRAIN
    assert (tmp_path / "sst-2" / "dev.tsv").read_bytes() == SST_DEV
    assert not (tmp_path / "sst-2" / "test.tsv").exists()
    assert fetch.status(fetch.DATASETS["sst-2"], tmp_path) == "yes"


def test_wrong_download_checksum_deletes_the_download_and_installs_nothing(server, tmp_path):
    with pytest.raises(fetch.FetchError) as error:
        fetch.fetch_dataset(
            sick(zip_digest="0" * 64), tmp_path, mirror=server.url, log=io.StringIO()
        )
    message = str(error.value)
    assert "checksum mismatch" in message and f"{server.url}/SICK.zip" in message
    assert "0" * 64 in message and sha256(SICK_ZIP) in message
    assert not (tmp_path / "sick" / "SICK.txt").exists()
    assert leftovers(tmp_path) == [] and not (tmp_path / ".downloads" / "SICK.zip").exists()


def test_wrong_file_checksum_leaves_no_file_a_reader_accepts(server, tmp_path):
    with pytest.raises(fetch.FetchError, match="checksum mismatch for sick/SICK.txt"):
        fetch.fetch_dataset(
            sick(text_digest="f" * 64), tmp_path, mirror=server.url, log=io.StringIO()
        )
    assert not (tmp_path / "sick" / "SICK.txt").exists()
    assert leftovers(tmp_path) == []


def test_a_truncated_transfer_is_kept_as_part_and_resumed_with_range(server, tmp_path):
    server.truncate_once.add("SICK.zip")
    with pytest.raises(fetch.FetchError, match="run the fetch again to resume"):
        fetch.fetch_dataset(sick(), tmp_path, mirror=server.url, retries=1, log=io.StringIO())
    part = tmp_path / ".downloads" / "SICK.zip.part"
    assert 0 < part.stat().st_size < len(SICK_ZIP)
    assert not (tmp_path / "sick" / "SICK.txt").exists()
    kept = part.stat().st_size

    log = io.StringIO()
    fetch.fetch_dataset(sick(), tmp_path, mirror=server.url, log=log)
    assert server.requests[-1] == ("SICK.zip", f"bytes={kept}-")
    assert f"resuming {server.url}/SICK.zip at byte {kept}" in log.getvalue()
    assert (tmp_path / "sick" / "SICK.txt").read_bytes() == SICK_TEXT
    assert leftovers(tmp_path) == []


def test_an_interrupted_transfer_resumes_within_one_fetch(server, tmp_path):
    server.truncate_once.add("SICK.zip")
    fetch.fetch_dataset(sick(), tmp_path, mirror=server.url, retries=3, log=io.StringIO())
    assert [ranged is not None for _, ranged in server.requests] == [False, True]
    assert (tmp_path / "sick" / "SICK.txt").read_bytes() == SICK_TEXT


def test_404_names_the_url_and_the_manual_alternative(server, tmp_path):
    del server.files["SICK.zip"]
    with pytest.raises(fetch.FetchError) as error:
        fetch.fetch_dataset(sick(), tmp_path, mirror=server.url, log=io.StringIO())
    message = str(error.value)
    assert f"{server.url}/SICK.zip: 404" in message
    assert str(tmp_path / ".downloads" / "SICK.zip") in message
    assert not (tmp_path / "sick" / "SICK.txt").exists() and leftovers(tmp_path) == []


def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_offline_names_url_error_and_manual_alternative(tmp_path):
    url = f"http://127.0.0.1:{unused_port()}"
    with pytest.raises(fetch.FetchError) as error:
        fetch.fetch_dataset(sick(), tmp_path, mirror=url, timeout=5, log=io.StringIO())
    message = str(error.value)
    assert f"could not download {url}/SICK.zip" in message
    assert "refused" in message.lower() and "offline" in message
    assert f"put it at {tmp_path / '.downloads' / 'SICK.zip'}" in message
    assert fetch.MIRROR_VARIABLE in message
    assert not (tmp_path / "sick").exists() and leftovers(tmp_path) == []


def test_a_download_put_in_place_by_hand_is_used(tmp_path):
    (tmp_path / ".downloads").mkdir()
    (tmp_path / ".downloads" / "SICK.zip").write_bytes(SICK_ZIP)
    url = f"http://127.0.0.1:{unused_port()}"  # nothing listens: the file must come from disk
    fetch.fetch_dataset(sick(), tmp_path, mirror=url, log=io.StringIO())
    assert (tmp_path / "sick" / "SICK.txt").read_bytes() == SICK_TEXT


def test_a_folder_as_mirror(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "SICK.zip").write_bytes(SICK_ZIP)
    fetch.fetch_dataset(sick(), tmp_path / "data", mirror=str(mirror), log=io.StringIO())
    assert (tmp_path / "data" / "sick" / "SICK.txt").read_bytes() == SICK_TEXT


def test_conll2003_says_where_to_get_it_and_where_to_put_it(tmp_path):
    with pytest.raises(fetch.FetchError) as error:
        fetch.fetch(["conll2003"], data_dir=tmp_path, log=io.StringIO())
    message = str(error.value)
    assert "no free download" in message and "NIST" in message
    assert "https://www.clips.uantwerpen.be/conll2003/ner/" in message
    assert f"{tmp_path}/conll2003/eng.train" in message


def test_task_names_resolve_to_datasets():
    assert fetch.resolve_tasks(["sick-e", "SICK_R", "sst2", "sts_b"]) == ["sick", "sst-2", "sts-b"]
    assert fetch.resolve_tasks(["all"]) == list(fetch.DATASETS)
    assert set(fetch.DATASETS) == {"sick", "sst-2", "mrpc", "sts-b", "mnli", "cola", "conll2003"}
    with pytest.raises(fetch.FetchError, match="unknown task 'qqp'"):
        fetch.resolve_tasks(["qqp"])


def test_every_recorded_checksum_matches_the_development_data_where_it_exists():
    """The digests of installed files were taken from ../shared/data; MRPC's dev.tsv is built."""
    from allennlp_tune.data.paths import DEVELOPMENT_DATA_DIR as shared

    if not shared.is_dir():
        pytest.skip("../shared/data is absent")
    for dataset in fetch.DATASETS.values():
        for target in dataset.targets:
            if target.sha256 and (shared / target.path).is_file():
                assert fetch.sha256_of(shared / target.path) == target.sha256, target.path


def test_mrpc_dev_is_built_as_glue_builds_it(tmp_path):
    glue = FIXTURE_DATA_DIR / "mrpc" / "glue"
    built = tmp_path / "dev.tsv"
    fetch.build_mrpc_dev(
        {
            "mrpc_dev_ids.tsv": glue / "dev_ids.tsv",
            "msr_paraphrase_train.txt": glue / "msr_paraphrase_train.txt",
        },
        built,
    )
    assert built.read_bytes() == (glue / "dev.tsv").read_bytes()


def test_fresh_data_dir_fetch_then_the_sick_reader_reads_it(server, tmp_path, monkeypatch):
    monkeypatch.setenv(fetch.MIRROR_VARIABLE, server.url)
    data_dir = tmp_path / "fresh"
    assert fetch.status(fetch.DATASETS["sick"], data_dir) == "no"
    fetch.fetch(["sick-e"], data_dir=data_dir, log=io.StringIO())
    assert fetch.status(fetch.DATASETS["sick"], data_dir) == "yes"
    reader = DatasetReader.from_params(
        Params(
            copy.deepcopy({"type": "sick", "split": "trial", "tokenizer": {"type": "whitespace"}})
        )
    )
    instances = list(reader.read(str(data_dir / "sick" / "SICK.txt")))
    expected = list(
        DatasetReader.from_params(
            Params({"type": "sick", "split": "trial", "tokenizer": {"type": "whitespace"}})
        ).read(str(FIXTURE_DATA_DIR / "sick" / "SICK.txt"))
    )
    assert instances and len(instances) == len(expected)


@pytest.fixture
def run_allennlp(monkeypatch):
    """`run_allennlp(*args)`: `allennlp.commands.main` in-process, default plugins skipped."""
    import sys

    import allennlp.commands

    def run(*args: str) -> None:
        monkeypatch.setattr(sys, "argv", ["allennlp", *args])
        monkeypatch.setattr(allennlp.commands, "import_plugins", lambda: None)
        allennlp.commands.main()

    return run


def test_cli_list_and_fetch(server, tmp_path, monkeypatch, capsys, run_allennlp):
    monkeypatch.setenv(fetch.MIRROR_VARIABLE, server.url)
    run_allennlp("tune-data", "list", "--data-dir", str(tmp_path))
    listing = capsys.readouterr().out
    assert f"data dir: {tmp_path} (mirror: {server.url})" in listing
    assert f"sick       SICK-E, SICK-R  no       ~0.2 MB   {server.url}/SICK.zip" in listing
    assert "conll2003" in listing and "no free download" in listing

    run_allennlp("tune-data", "fetch", "sick", "--data-dir", str(tmp_path), "--no-progress")
    assert (tmp_path / "sick" / "SICK.txt").read_bytes() == SICK_TEXT
    with pytest.raises(SystemExit) as exit_:
        run_allennlp("tune-data", "fetch", "conll2003", "--data-dir", str(tmp_path))
    assert exit_.value.code == 1
    assert "no free download" in capsys.readouterr().err
