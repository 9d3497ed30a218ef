"""The `[nltk_data] Error loading punkt / wordnet` lines printed offline at start-up.

They come from `allennlp_models/rc/tools/narrativeqa.py`, which calls `nltk.download` at import
when `tokenizers/punkt` is not found. `allennlp`'s `import_plugins()` imports the default plugin
`allennlp_models` (every submodule) *before* it imports plugins named in `.allennlp_plugins`,
so `allennlp_tune`'s import runs only after the lines are printed, and `nltk.download` prints
errors even with `quiet=True`. Fix 9 of allennlp_tune/compat.py therefore acts from the
start-up hook (allennlp_tune.pth, `allennlp_tune_preimport`): during that module's import,
`nltk.download` is quiet and a failed download is logged once, at DEBUG, with its reason.

And the rest of what every command printed before it started (fix 13): py-rouge's
`pkg_resources` deprecation warning, AllenNLP's `Plugin ... available` INFO lines and the
plugin's own re-registration of `reduce_on_plateau`; `-v` / ALLENNLP_TUNE_VERBOSE=1 bring back
AllenNLP's lines.
"""

import logging
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def offline_environment(tmp_path: Path) -> dict:
    """Network blocked for urllib (a proxy on a port where nothing listens), no nltk data in
    the home folder."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    environment = dict(os.environ)
    proxy = f"http://127.0.0.1:{port}"
    environment.update(
        http_proxy=proxy, https_proxy=proxy, HTTP_PROXY=proxy, HTTPS_PROXY=proxy, HOME=str(tmp_path)
    )
    environment.pop("NO_PROXY", None)
    environment.pop("no_proxy", None)
    return environment


def nltk_has_punkt(environment: dict) -> bool:
    script = (
        "import nltk\ntry:\n    nltk.data.find('tokenizers/punkt')\n"
        "except LookupError:\n    print('no')"
    )
    found = subprocess.run(
        [sys.executable, "-c", script], env=environment, capture_output=True, text=True
    )
    return "no" not in found.stdout


def test_importing_the_plugin_prints_no_nltk_lines(tmp_path):
    environment = offline_environment(tmp_path)
    script = (
        "import sys, allennlp_tune\n"
        "print('narrativeqa imported:', 'allennlp_models.rc.tools.narrativeqa' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        env=environment,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "[nltk_data]" not in result.stdout + result.stderr
    assert "narrativeqa imported: False" in result.stdout


def test_allennlp_command_prints_no_nltk_lines_offline(tmp_path):
    environment = offline_environment(tmp_path)
    if nltk_has_punkt(environment):
        pytest.skip("nltk's punkt data is installed here: nothing is downloaded at start-up")
    result = subprocess.run(
        [str(Path(sys.executable).with_name("allennlp")), "tune-data", "list"],
        env=environment,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "[nltk_data]" not in result.stdout + result.stderr
    # What the lines said is in the log at DEBUG, which allennlp does not print by default.
    assert "nltk data 'punkt' is not installed" not in result.stdout + result.stderr


def test_an_online_download_still_happens_and_a_failed_one_is_logged(monkeypatch, caplog, capsys):
    nltk = pytest.importorskip("nltk")
    from allennlp_tune_preimport.stack import _QuietNltkDownload

    calls = []

    def fake_download(info_or_id=None, quiet=False, print_error_to=sys.stderr, **kwargs):
        calls.append(info_or_id)
        if info_or_id == "there":
            return True
        print(
            f"[nltk_data] Error loading {info_or_id}: <urlopen error offline>", file=print_error_to
        )
        return False

    monkeypatch.setattr(nltk, "download", fake_download)
    with caplog.at_level(logging.DEBUG), _QuietNltkDownload():
        assert nltk.download("there") is True
        assert nltk.download("punkt") is False
    assert nltk.download is fake_download  # restored after the import
    assert calls == ["there", "punkt"]
    captured = capsys.readouterr()
    assert "[nltk_data]" not in captured.out + captured.err
    [record] = [r for r in caplog.records if "nltk data" in r.getMessage()]
    assert record.levelno == logging.DEBUG
    assert "'punkt'" in record.getMessage() and "urlopen error offline" in record.getMessage()


# ---- a quiet start (allennlp_tune/compat.py, fix 13) -------------------------------------------


def allennlp_command(*args: str, tmp_path: Path, **environment: str) -> subprocess.CompletedProcess:
    """The venv's `allennlp` console script from an empty folder, with an empty HOME: no
    plugins file anywhere, as for a user who installed the plugin."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ALLENNLP_TUNE_VERBOSE")}
    env.update(HOME=str(tmp_path), HF_HUB_OFFLINE="1", **environment)
    return subprocess.run(
        [str(Path(sys.executable).with_name("allennlp")), *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def noise(stderr: str) -> list:
    """The warnings and INFO lines in a command's stderr."""
    return [line for line in stderr.splitlines() if "Warning" in line or " - INFO - " in line]


@pytest.mark.parametrize("command", ["tune-report", "tune-compare"])
def test_the_help_of_the_plugins_commands_prints_no_warning_and_no_info_line(command, tmp_path):
    result = allennlp_command(command, "--help", tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith(f"usage: allennlp {command}")
    assert noise(result.stderr) == []


def test_a_start_that_imports_every_plugin_is_quiet_unless_verbose(tmp_path):
    # `allennlp --help` imports AllenNLP's plugins (allennlp-models, whose py-rouge imports
    # pkg_resources) and this one, as every command that runs does before it starts.
    quiet = allennlp_command("--help", tmp_path=tmp_path)
    assert quiet.returncode == 0, quiet.stderr[-3000:]
    assert noise(quiet.stderr) == []
    verbose = allennlp_command("--help", tmp_path=tmp_path, ALLENNLP_TUNE_VERBOSE="1")
    assert verbose.returncode == 0, verbose.stderr[-3000:]
    lines = noise(verbose.stderr)
    assert any(line.endswith("Plugin allennlp_models available") for line in lines), lines
    assert any(line.endswith("Plugin allennlp_tune available") for line in lines), lines
    # The plugin's own replacement of `reduce_on_plateau` logs nothing, verbose or not.
    assert not any("reduce_on_plateau" in line for line in lines), lines
