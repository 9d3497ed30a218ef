"""
The Optuna RDB storage that tune-search's studies (`--storage`) and a shared grid's workers
(`--coordinator`) live in: its URL with the installed driver, checked before Optuna opens it, so
that a URL it cannot use, or an SQLite file that is not a database (damaged, or another file), in
a folder that is missing or cannot be written, ends in one line naming the option and the fix
instead of SQLAlchemy's traceback; and the study opened with a few retries.
"""

import importlib.util
import random
import sqlite3
import time
from pathlib import Path
from typing import Optional

from allennlp.common.checks import ConfigurationError

from allennlp_tune.rundir.folders import folder_problem

STORAGE_FORMS = (
    "an Optuna RDB URL, dialect[+driver]://user:password@host:port/database, such as "
    "sqlite:///path/to/optuna.db or postgresql://user:password@host:5432/database "
    "(leave --storage out for sqlite:///RESULTS_DIR/optuna.db)"
)
SQLITE_HEADER = b"SQLite format 3\x00"


def storage_with_driver(storage: str) -> str:
    """
    `postgresql://...` with the PostgreSQL driver that is installed: SQLAlchemy 2.1 reads a bare
    `postgresql://` as psycopg 3, and the lock pins psycopg2 (`postgres://` is accepted too).
    A URL that names its driver (`postgresql+psycopg://`) is left alone.
    """
    scheme, separator, rest = storage.partition("://")
    if separator and scheme in ("postgresql", "postgres"):
        installed = importlib.util.find_spec
        if installed("psycopg") is None and installed("psycopg2") is not None:
            return f"postgresql+psycopg2://{rest}"
        return f"postgresql://{rest}"
    return storage


def public_url(storage: str) -> str:
    """The storage URL without its password, for messages."""
    from sqlalchemy.engine import make_url

    try:
        return make_url(storage).render_as_string(hide_password=True)
    except Exception:  # not a URL sqlalchemy knows: show it as given
        return storage


def check_storage(
    storage: str,
    option: str = "--storage",
    forms: str = STORAGE_FORMS,
    fix: Optional[str] = None,
) -> None:
    """
    Fails early, naming `option` and the `forms` it takes, on a URL that Optuna's RDB storage
    cannot use (not a URL, an unknown database, a driver that is not installed, an SQLite file
    that `sqlite_problem` refuses), instead of the SQLAlchemy traceback `optuna.create_study`
    would end in. `fix` says what to do with an SQLite file that is not a database.
    """
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    try:
        url = make_url(storage)
        dialect = url.get_dialect()
    except NoSuchModuleError:  # (a subclass of ArgumentError)
        scheme = storage.partition("://")[0]
        raise ConfigurationError(
            f"{option} {public_url(storage)!r}: {scheme!r} is not a database SQLAlchemy knows; "
            f"expected {forms}."
        ) from None
    except ArgumentError:
        raise ConfigurationError(
            f"{option} {storage!r} is not a database URL; expected {forms}."
        ) from None
    try:
        dialect.import_dbapi()
    except ImportError as error:
        raise ConfigurationError(
            f"{option} {public_url(storage)!r}: its database driver is not installed "
            f"({error}). Install it (for postgresql://: pip install 'allennlp-tune[postgres]'), "
            "or use sqlite:///."
        ) from None
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        problem = sqlite_problem(Path(url.database), fix)
        if problem is not None:
            raise ConfigurationError(f"{option} {public_url(storage)}: {problem}")


def sqlite_problem(path: Path, fix: Optional[str] = None) -> Optional[str]:
    """
    Why SQLite cannot keep a study in the file `path` (created when missing), or `None`: a
    folder, a missing folder or one that cannot be written (SQLite writes a journal beside the
    file), a file that is not an SQLite database or is damaged. Reads the file only.
    """
    fix = fix or "name a new file or the database you meant"
    if path.is_dir():
        example = path / "optuna.db"
        return f"{path} is a folder, not a database file; name a file in it (e.g. {example})."
    folder = path.parent
    problem = folder_problem(folder)
    if problem is not None:
        return f"its folder {folder} {problem}"
    if not folder.exists():
        return (
            f"the folder {folder} does not exist; create it (mkdir -p {folder}) or name a "
            "database in a folder that exists."
        )
    if not path.is_file() or path.stat().st_size == 0:
        return None  # SQLite creates it
    with open(path, "rb") as handle:
        header = handle.read(len(SQLITE_HEADER))
    if header != SQLITE_HEADER:
        return f"{path} is not an SQLite database (it lacks SQLite's header); {fix}."
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=60)
        try:
            found = connection.execute("PRAGMA quick_check").fetchone()
        finally:
            connection.close()
    except sqlite3.OperationalError:
        return None  # locked by a worker, say: Optuna waits for it or says so itself
    except sqlite3.DatabaseError as error:
        found = (str(error),)
    if found and found[0] != "ok":
        # quick_check answers one line per problem it finds, under a "*** in database main
        # ***" heading: the first problem, on the one line.
        lines = [line.strip() for line in str(found[0]).splitlines()]
        lines = [line for line in lines if line and not line.startswith("***")] or ["no detail"]
        more = f" and {len(lines) - 1} more" if len(lines) > 1 else ""
        return f"{path} is a damaged SQLite database ({lines[0]}{more}); {fix}."
    return None


def opening_failed(option: str, storage: str, error: Exception) -> ConfigurationError:
    """The one line for a storage that passed `check_storage` but still cannot be opened."""
    reason = str(getattr(error, "orig", None) or error).splitlines()[0]
    return ConfigurationError(
        f"{option} {public_url(storage)}: the database cannot be opened ({reason}); check that "
        "it is reachable and writable, or name another."
    )


def open_study(storage: str, study_name: str, direction: str, sampler, pruner):
    """`optuna.create_study(load_if_exists=True)`, retried a little: workers starting together
    may race to create the tables or the study."""
    import optuna
    from sqlalchemy.exc import SQLAlchemyError

    for attempt in range(5):
        try:
            return optuna.create_study(
                storage=storage,
                study_name=study_name,
                direction=direction,
                load_if_exists=True,
                sampler=sampler,
                pruner=pruner,
            )
        except SQLAlchemyError as error:
            if attempt == 4:
                raise opening_failed("--storage", storage, error) from error
            time.sleep(0.5 + random.random())
    raise AssertionError("unreachable")
