"""tune-search --storage: a URL Optuna cannot use ends in one line naming the option."""

import pytest

from allennlp_tune.commands.tune_search import add_search_parser
from tests.results.test_grid import run_cli


@pytest.mark.parametrize(
    "storage, problem",
    [
        ("foo://bar", "'foo' is not a database SQLAlchemy knows"),
        ("optuna.db", "is not a database URL"),
        ("mysql://tune:secret@127.0.0.1/db", "database driver is not installed"),
    ],
)
def test_an_unusable_storage_url_is_named_with_the_expected_forms(
    tmp_path, tiny_config, tiny_ext_vars, capsys, storage, problem
):
    argv = [tiny_config, "--param", "TUNE_LR=1e-3:1e-1", "--trials", 1, "--study-name", "s"]
    argv += ["--results-dir", tmp_path / "search", "--storage", storage]
    argv += [f"--ext-var={key}={value}" for key, value in tiny_ext_vars.items()]
    with pytest.raises(SystemExit) as exit_info:
        run_cli(add_search_parser, argv)
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert error.startswith("allennlp tune-search: --storage ") and problem in error
    assert error.count("\n") == 1 and "Traceback" not in error
    assert "secret" not in error  # a password is never echoed
    if "driver" not in problem:
        assert "sqlite:///path/to/optuna.db" in error and "postgresql://" in error
    assert not list((tmp_path / "search").glob("**/*.json"))  # nothing was trained
