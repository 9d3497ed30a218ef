"""`allennlp probe` / `allennlp mi` are found through a `.allennlp_plugins` file, as from the
repository root."""

import os
import subprocess
import sys

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


def test_subcommands_are_found_from_any_folder_through_the_global_plugins_file(tmp_path):
    # Outside the checkout there is no `.allennlp_plugins`, and `--include-package` comes too
    # late for subcommands (AllenNLP picks the subcommand before it imports any package). The
    # supported way is AllenNLP's global plugins file, `~/.allennlp/plugins` (README, "Use the
    # plugin from any folder").
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    env = dict(os.environ, HF_HUB_OFFLINE="1", HOME=str(home))
    env.pop("PYTHONPATH", None)

    def tune_report_help():
        return subprocess.run(
            [sys.executable, "-m", "allennlp", "tune-report", "--help"],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )

    without = tune_report_help()
    assert without.returncode != 0 and "invalid choice: 'tune-report'" in without.stderr

    (home / ".allennlp").mkdir(parents=True)
    (home / ".allennlp" / "plugins").write_text("allennlp_tune\n")
    found = tune_report_help()
    assert found.returncode == 0, found.stderr[-3000:]
    assert "--json" in found.stdout and "--html" in found.stdout


def test_allennlp_help_lists_every_subcommand_of_the_plugin():
    # argparse %-formats each subcommand's help line: a bare "%" in one (tune-report's "95%")
    # broke `allennlp --help` for every command.
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(REPO_ROOT))
    result = subprocess.run(
        [sys.executable, "-m", "allennlp", "--help"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for command in ("probe", "mi", "tune-grid", "tune-report", "tune-compare", "tune-search",
                    "tune-data"):  # fmt: skip
        assert f"    {command} " in result.stdout, command
