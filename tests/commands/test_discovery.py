"""The plugin's subcommands (`allennlp probe`, `allennlp tune-report`, ...) are found wherever
`allennlp` runs: the installed package is discovered as a plugin (allennlp_tune/compat.py,
fix 12), and the `.allennlp_plugins` and `~/.allennlp/plugins` files keep working."""

import os
import subprocess
import sys
from pathlib import Path

from allennlp_tune.data.paths import REPO_ROOT


def test_subcommands_are_discovered_through_the_plugins_file(tmp_path):
    # Both lines: `allennlp_tune` registers the readers, `allennlp_tune.commands` the commands
    # (until `allennlp_tune/__init__.py` imports them, the first alone would not).
    (tmp_path / ".allennlp_plugins").write_text("allennlp_tune\nallennlp_tune.commands\n")
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(REPO_ROOT))
    result = subprocess.run(
        [sys.executable, "-m", "allennlp", "probe", "--help"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for option in ("--archive", "--model-name", "--reader", "--pooling", "--probe", "--layers"):
        assert option in result.stdout


def allennlp_from_any_folder(*args: str, home: Path, work: Path) -> subprocess.CompletedProcess:
    """The venv's `allennlp` console script, as a user who installed the plugin runs it: from
    a folder of their own, no PYTHONPATH."""
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, HF_HUB_OFFLINE="1", HOME=str(home))
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        [str(Path(sys.executable).with_name("allennlp")), *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_an_installed_plugin_s_subcommands_work_from_any_folder_without_a_plugins_file(tmp_path):
    # Neither `.allennlp_plugins` nor `~/.allennlp/plugins` (an empty HOME): the installed
    # package is discovered (allennlp_tune/compat.py, fix 12).
    found = allennlp_from_any_folder(
        "tune-report", "--help", home=tmp_path / "home", work=tmp_path / "work"
    )
    assert found.returncode == 0, found.stderr[-3000:]
    assert "--json" in found.stdout and "--html" in found.stdout


def test_the_global_plugins_file_still_works(tmp_path):
    # Named in the file and discovered as installed: imported once, no duplicate registration.
    home = tmp_path / "home"
    (home / ".allennlp").mkdir(parents=True)
    (home / ".allennlp" / "plugins").write_text("allennlp_tune\nallennlp_tune.commands\n")
    found = allennlp_from_any_folder("tune-compare", "--help", home=home, work=tmp_path / "work")
    assert found.returncode == 0, found.stderr[-3000:]
    assert "--encoder" in found.stdout


def test_discovery_adds_the_installed_plugin_once_after_the_plugins_files(tmp_path, monkeypatch):
    from allennlp.common import plugins

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(plugins, "GLOBAL_PLUGINS_FILENAME", str(tmp_path / "global"))
    assert list(plugins.discover_plugins()) == ["allennlp_tune"]
    (tmp_path / ".allennlp_plugins").write_text("allennlp_tune.commands\nallennlp_tune\n")
    (tmp_path / "global").write_text("some_other_plugin\n")
    assert list(plugins.discover_plugins()) == [
        "allennlp_tune.commands",
        "allennlp_tune",
        "some_other_plugin",
    ]


def test_allennlp_help_lists_every_subcommand_of_the_plugin_from_any_folder(tmp_path):
    # argparse %-formats each subcommand's help line: a bare "%" in one (tune-report's "95%")
    # broke `allennlp --help` for every command.
    result = allennlp_from_any_folder("--help", home=tmp_path / "home", work=tmp_path / "work")
    assert result.returncode == 0, result.stderr[-3000:]
    for command in ("probe", "mi", "tune-grid", "tune-report", "tune-compare", "tune-search",
                    "tune-data", "tune-export", "tune-test", "tune-layers"):  # fmt: skip
        assert f"    {command} " in result.stdout, command
