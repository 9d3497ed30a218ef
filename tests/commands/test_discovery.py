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
