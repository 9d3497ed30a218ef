"""
Places a command cannot keep its study or its runs in end in one line naming the option, the
place and the fix, exit code 2, instead of SQLAlchemy's or the OS's traceback: `--coordinator`
naming a file that is not a database, a folder, a database in a missing or read-only folder; a
search's `optuna.db` that is damaged; `--results-dir` under `/proc` or on a read-only
filesystem. (`tune-export` and `tune-data fetch`: tests/commands/test_tune_export.py and
tests/data/test_fetch_mpnet.py.)
"""

import errno
import os
import sqlite3
from pathlib import Path

import pytest
from allennlp.common.checks import ConfigurationError

from allennlp_tune.commands.tune_grid import add_grid_parser
from allennlp_tune.commands.tune_search import add_search_parser
from allennlp_tune.experiments.workers import Coordinator
from tests.results.test_compare import BERT, allennlp, write_reviews
from tests.results.test_grid import run_cli


def one_line_error(add_parser, argv, capsys) -> str:
    with pytest.raises(SystemExit) as exit_info:
        run_cli(add_parser, argv)
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert "Traceback" not in error and error.count("\n") == 1, error
    return error


@pytest.fixture
def read_only(tmp_path, monkeypatch) -> Path:
    """A folder on a "read-only filesystem": creating anything in it fails with EROFS (the
    tests run as root, whom permissions do not stop)."""
    folder = tmp_path / "read_only"
    folder.mkdir()
    real_mkdir, real_open = os.mkdir, os.open

    def refused(path) -> bool:
        return Path(os.fsdecode(path)).parent == folder

    def mkdir(path, *args, **kwargs):
        if refused(path):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(path))
        return real_mkdir(path, *args, **kwargs)

    def open_(path, flags, *args, **kwargs):
        if refused(path) and flags & os.O_CREAT:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)
    monkeypatch.setattr(os, "open", open_)
    return folder


def grid_argv(tiny_config, tiny_ext_vars, results):
    argv = [tiny_config, "--seeds", 1, "--results-dir", results, "--no-progress", "--no-plan"]
    return argv + [f"--ext-var={key}={value}" for key, value in tiny_ext_vars.items()]


def damaged_database(path: Path) -> Path:
    """An SQLite file whose header is fine but whose pages are not."""
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE trials (value TEXT)")
    connection.executemany("INSERT INTO trials VALUES (?)", [("x" * 100,)] * 400)
    connection.commit()
    connection.close()
    with open(path, "r+b") as handle:
        handle.seek(2 * 4096)
        handle.write(b"\xff" * 200)
    return path


def damaged_table_page(path: Path) -> Path:
    """An SQLite file that opens, but whose third page (a table's) is overwritten: SQLite's
    quick_check answers in two lines ("*** in database main ***", then "Page 3: ...")."""
    connection = sqlite3.connect(path)
    for table in range(6):
        connection.execute(f"CREATE TABLE t{table} (id INTEGER PRIMARY KEY, value TEXT)")
        connection.execute(f"CREATE INDEX i{table} ON t{table}(value)")
        connection.executemany(
            f"INSERT INTO t{table}(value) VALUES (?)", [(f"x{row}",) for row in range(50)]
        )
    connection.commit()
    connection.close()
    with open(path, "r+b") as handle:
        handle.seek(2 * 4096)
        handle.write(b"\xff" * 200)
    answer = sqlite3.connect(path).execute("PRAGMA quick_check").fetchone()[0]
    assert answer.count("\n") == 1 and "Page 3:" in answer, answer  # the case this builds
    return path


DAMAGES = {"not a database": None, "damaged pages": damaged_database, "page 3": damaged_table_page}


def damage_file(path: Path, damage: str) -> Path:
    if DAMAGES[damage] is None:
        path.write_bytes(b"garbage garbage garbage\n")
        return path
    return DAMAGES[damage](path)


# ---- --coordinator --------------------------------------------------------------------------


def test_a_coordinator_that_is_not_a_database_is_named(
    tmp_path, tiny_config, tiny_ext_vars, capsys
):
    notes = tmp_path / "notes.db"
    notes.write_text("my notes, not a database\n")
    argv = grid_argv(tiny_config, tiny_ext_vars, tmp_path / "results")
    error = one_line_error(add_grid_parser, [*argv, "--coordinator", f"sqlite:///{notes}"], capsys)
    assert error.startswith(f"allennlp tune-grid: --coordinator sqlite:///{notes}: {notes} is not")
    assert "not an SQLite database" in error and "name the workers' database" in error
    assert notes.read_text() == "my notes, not a database\n"  # left alone

    damaged = damaged_database(tmp_path / "workers.db")
    error = one_line_error(
        add_grid_parser, [*argv, "--coordinator", f"sqlite:///{damaged}"], capsys
    )
    assert f"{damaged} is a damaged SQLite database (" in error

    damaged = damaged_table_page(tmp_path / "workers2.db")
    error = one_line_error(
        add_grid_parser, [*argv, "--coordinator", f"sqlite:///{damaged}"], capsys
    )
    assert f"{damaged} is a damaged SQLite database (Page 3: btreeInitPage()" in error

    error = one_line_error(
        add_grid_parser, [*argv, "--coordinator", f"sqlite:///{tmp_path}"], capsys
    )
    assert f"{tmp_path} is a folder, not a database file; name a file in it" in error
    assert not (tmp_path / "results").exists()


def test_a_coordinator_in_a_missing_folder_says_to_create_it(
    tmp_path, tiny_config, tiny_ext_vars, capsys
):
    database = tmp_path / "missing" / "workers.db"
    argv = grid_argv(tiny_config, tiny_ext_vars, tmp_path / "results")
    error = one_line_error(
        add_grid_parser, [*argv, "--coordinator", f"sqlite:///{database}"], capsys
    )
    assert f"the folder {database.parent} does not exist; create it (mkdir -p" in error
    assert not database.parent.exists()


def test_a_coordinator_in_a_folder_that_cannot_be_written_is_named(
    tmp_path, tiny_config, tiny_ext_vars, capsys, read_only
):
    argv = grid_argv(tiny_config, tiny_ext_vars, tmp_path / "results")
    error = one_line_error(
        add_grid_parser, [*argv, "--coordinator", "sqlite:////proc/w.db"], capsys
    )
    assert error.startswith("allennlp tune-grid: --coordinator sqlite:////proc/w.db: its folder")
    assert "/proc takes no new files or folders" in error
    # A read-only filesystem (simulated: os.mkdir / os.open raise EROFS there).
    with pytest.raises(ConfigurationError) as refused:
        Coordinator(f"sqlite:///{read_only / 'workers.db'}").checked()
    assert f"its folder {read_only} cannot be written: {read_only} is on a read-only" in str(
        refused.value
    )


def test_a_coordinator_that_still_cannot_be_opened_is_one_line(tmp_path, monkeypatch):
    """Past the checks (say the folder turns read-only between them and Optuna): the last of
    the retries is a `ConfigurationError` too, not SQLAlchemy's."""
    import optuna
    from sqlalchemy.exc import OperationalError

    def refuse(*args, **kwargs):
        raise OperationalError("connect", {}, Exception("unable to open database file"))

    monkeypatch.setattr(optuna.storages, "RDBStorage", refuse)
    monkeypatch.setattr("allennlp_tune.experiments.workers.time.sleep", lambda seconds: None)
    coordinator = Coordinator(f"sqlite:///{tmp_path / 'workers.db'}").checked()
    with pytest.raises(ConfigurationError, match="the database cannot be opened") as refused:
        coordinator.open_storage()
    assert "--coordinator sqlite:///" in str(refused.value)
    assert "unable to open database file" in str(refused.value)


# ---- tune-search's optuna.db ----------------------------------------------------------------


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_search_storage_is_named_with_the_fix(
    tmp_path, tiny_config, tiny_ext_vars, capsys, damage
):
    results = tmp_path / "search"
    results.mkdir()
    database = results / "optuna.db"
    damage_file(database, damage)
    argv = [tiny_config, "--param", "TUNE_LR=1e-3:1e-1", "--trials", 1, "--study-name", "s"]
    argv += ["--results-dir", results]
    argv += [f"--ext-var={key}={value}" for key, value in tiny_ext_vars.items()]
    error = one_line_error(add_search_parser, argv, capsys)
    assert error.startswith("allennlp tune-search: --storage (default: RESULTS_DIR/optuna.db) ")
    problem = "is not an SQLite database" if damage == "not a database" else "is a damaged"
    assert f"{database.resolve()} {problem}" in error
    assert "move it away" in error and "pass --storage" in error
    assert sorted(path.name for path in results.iterdir()) == ["optuna.db"]  # nothing trained


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_budget_search_database_is_named_as_the_budgets(
    tmp_path, monkeypatch, capsys, damage
):
    """tune-compare --budget keeps its searches in RESULTS_DIR/search/optuna.db and has no
    --storage: the line names that file as the budget's and a fix tune-compare takes."""
    task = write_reviews(tmp_path / "task")
    results = tmp_path / "out"
    (results / "search").mkdir(parents=True)
    database = results / "search" / "optuna.db"
    damage_file(database, damage)
    before = database.read_bytes()
    argv = ["tune-compare", str(task), "--encoder", str(BERT), "--modes", "fe", "ft"]
    argv += ["--seeds", "1", "--budget", "2", "--results-dir", str(results)]
    assert allennlp(monkeypatch, *argv) == 2
    error = capsys.readouterr().err
    assert "Traceback" not in error and error.count("\n") == 1, error
    assert "tune-compare --budget's searches (RESULTS_DIR/search/optuna.db)" in error, error
    problem = "is not an SQLite database" if damage == "not a database" else "is a damaged"
    assert f"{database.resolve()} {problem}" in error, error
    assert "move it away" in error and "--results-dir" in error
    assert "--storage" not in error and "RESULTS_DIR/optuna.db" not in error
    assert database.read_bytes() == before  # left as it was
    assert [path.name for path in (results / "search").iterdir()] == ["optuna.db"]
    assert not list(results.rglob("metrics.json"))  # nothing trained


# ---- --results-dir --------------------------------------------------------------------------


def test_a_results_dir_under_proc_is_named(tiny_config, tiny_ext_vars, capsys):
    argv = grid_argv(tiny_config, tiny_ext_vars, "/proc/tune-results")
    error = one_line_error(add_grid_parser, argv, capsys)
    assert error.startswith("allennlp tune-grid: --results-dir /proc/tune-results cannot be ")
    assert "/proc takes no new files or folders" in error and "give a folder" in error
    search = [tiny_config, "--param", "TUNE_LR=1e-3:1e-1", "--trials", 1, "--study-name", "s"]
    search += ["--results-dir", "/proc/tune-results"]
    search += [f"--ext-var={key}={value}" for key, value in tiny_ext_vars.items()]
    error = one_line_error(add_search_parser, search, capsys)
    assert error.startswith("allennlp tune-search: --results-dir /proc/tune-results cannot be ")


def test_a_results_dir_on_a_read_only_filesystem_is_named(
    tiny_config, tiny_ext_vars, capsys, read_only
):
    results = read_only / "results"
    error = one_line_error(add_grid_parser, grid_argv(tiny_config, tiny_ext_vars, results), capsys)
    assert error.startswith(f"allennlp tune-grid: --results-dir {results} cannot be created: ")
    assert f"{read_only} is on a read-only filesystem; give a folder" in error
