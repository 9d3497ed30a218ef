"""
`--ext-var NAME=VALUE` of tune-grid and tune-compare: a name that neither the plugin nor the
configs being run read (a misspelt `TUNE_LRR`, which would train with the default rate) stops
the command before anything trains, also under `--plan-only`, naming the nearest known name;
every variable a user's own config reads, directly, through a wrapper or in a file it imports,
is accepted.
"""

import argparse
from pathlib import Path

import pytest
from allennlp.common.checks import ConfigurationError

import allennlp_tune  # noqa: F401  (registers the components, sets the ext var defaults)
from allennlp_tune.commands.tune_compare import TuneCompare
from allennlp_tune.commands.tune_grid import TuneGrid
from allennlp_tune.config_vars import CONFIG_VARS, check_ext_vars, ext_vars_read_by, jsonnet_texts
from allennlp_tune.data.paths import FIXTURE_DATA_DIR, FIXTURE_MODELS_DIR, REPO_ROOT

TINY_CONFIG = Path(__file__).parent / "fixtures" / "sst2_bow_fe.jsonnet"


@pytest.fixture(scope="module")
def allennlp():
    """Runs `allennlp tune-grid|tune-compare ARGV...` with the subcommands' parsers and mains."""
    parser = argparse.ArgumentParser(prog="allennlp")
    subparsers = parser.add_subparsers()
    TuneGrid().add_subparser(subparsers)
    TuneCompare().add_subparser(subparsers)

    def run(*argv: str) -> int:
        args = parser.parse_args(list(argv))
        try:
            args.func(args)
        except SystemExit as exit:
            return exit.code
        return 0

    return run


def test_tune_grid_refuses_an_ext_var_no_config_reads(allennlp, capsys, tmp_path):
    results = tmp_path / "results"
    argv = ["tune-grid", str(TINY_CONFIG), "--results-dir", str(results), "--plan-only"]
    argv += ["--ext-var", f"TUNE_DATA_DIR={FIXTURE_DATA_DIR}", "--ext-var", "TUNE_LRR=1e-4"]
    assert allennlp(*argv) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith(
        f"allennlp tune-grid: --ext-var TUNE_LRR=1e-4: neither the plugin nor the config "
        f"{TINY_CONFIG} reads TUNE_LRR; did you mean TUNE_LR? Known: TUNE_AUTOCAST, "
    ), line
    assert not results.exists()


def test_tune_compare_refuses_an_ext_var_no_config_reads(allennlp, capsys, tmp_path):
    argv = ["tune-compare", "sst2", "--encoder", str(FIXTURE_MODELS_DIR / "bert-uncased")]
    argv += ["--results-dir", str(tmp_path / "results"), "--plan-only", "--modes", "ft"]
    argv += ["--ext-var", f"TUNE_DATA_DIR={FIXTURE_DATA_DIR}"]
    assert allennlp(*argv, "--ext-var", "TUNE_EPOHCS=1") == 2
    err = capsys.readouterr().err
    assert "allennlp tune-compare: --ext-var TUNE_EPOHCS=1: neither the plugin nor the " in err
    assert "experiment.libsonnet" in err and "did you mean TUNE_EPOCHS?" in err
    assert not (tmp_path / "results").exists()


def test_a_variable_a_users_config_reads_is_known(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "common.libsonnet").write_text(
        'local env(name) = std.extVar(name);\n{scale: env("MY_SCALE"), seed: std.extVar("SEED")}'
    )
    config = tmp_path / "config.jsonnet"
    config.write_text(
        'local common = import "lib/common.libsonnet";\n'
        "local names = ['MY_DIR'];\n"
        "common + {data: [std.extVar(name) for name in names], run: std.extVar('my_run')}\n"
    )
    for name in ("MY_SCALE", "SEED", "MY_DIR", "my_run", "TUNE_LR", "TUNE_FEATURE_CACHE_DIR"):
        check_ext_vars({name: "1"}, [config])
    check_ext_vars({"MY_OVERRIDE": "1"}, [config], ['{"trainer": std.extVar("MY_OVERRIDE")}'])
    with pytest.raises(ConfigurationError, match="did you mean MY_SCALE?"):
        check_ext_vars({"MY_SCALES": "2"}, [config])


def test_the_plugin_lists_every_variable_its_configs_read():
    configs = sorted((REPO_ROOT / "training_config").rglob("*.jsonnet"))
    texts = jsonnet_texts(
        [*configs, REPO_ROOT / "allennlp_tune" / "configs" / "experiment.libsonnet"]
    )
    assert REPO_ROOT / "allennlp_tune" / "configs" / "vars.libsonnet" in texts  # imports followed
    assert ext_vars_read_by(texts.values()) - set(CONFIG_VARS) == set()
