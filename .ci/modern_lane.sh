#!/usr/bin/env bash
# CI, modern lane (issue 19): the README's install and test commands with the second lock,
# requirements/lock-modern.txt (transformers 5.24, huggingface_hub 2.4, tokenizers 0.23; the rest
# as in requirements/lock.txt), in its own venv:
#
#   make install LOCK=requirements/lock-modern.txt VENV=.venv-modern
#   make test    LOCK=requirements/lock-modern.txt VENV=.venv-modern
#
# AllenNLP 2.10.1 runs there only through allennlp-tune's start-up hook (allennlp_tune.pth,
# allennlp_tune/compat.py fixes 5-9); `make install` checks that it is active
# (scripts/check_lock.py). Idempotent like `make install`: the venv (MODERN_VENV, default
# .venv-modern/, git-ignored) is reinstalled only when the lock, setup.py or pyproject.toml changes.
# MODERN_TESTS overrides the pytest selection (e.g. MODERN_TESTS="tests/test_compat.py";
# MODERN_TESTS=tests for every test).
set -euo pipefail
cd "$(dirname "$0")/.."
LOCK=requirements/lock-modern.txt
VENV=${MODERN_VENV:-.venv-modern}
say() { echo "modern lane: $*"; }

# A new venv starts as a copy of the locked lane's .venv (MODERN_SEED_VENV; empty for a venv of
# its own): the two locks differ in six packages, so pip fetches those and not torch again.
make install LOCK="$LOCK" VENV="$VENV" SEED_VENV="${MODERN_SEED_VENV-.venv}"
say "stack: $("$VENV/bin/python" -c 'import platform, torch, transformers, huggingface_hub, tokenizers
print(f"torch {torch.__version__}, transformers {transformers.__version__}, huggingface_hub "
      f"{huggingface_hub.__version__}, tokenizers {tokenizers.__version__}, python "
      f"{platform.python_version()}")' 2>/dev/null)"
# `allennlp` subprocesses of the tests must be this venv's.
export PATH="$PWD/$VENV/bin:$PATH"
start=$(date +%s)
if [[ -n "${MODERN_TESTS:-}" ]]; then
  read -r -a SELECTION <<<"$MODERN_TESTS"
  "$VENV/bin/python" -m pytest -q -p no:cacheprovider -rfEs "${SELECTION[@]}"
else
  # The tests that reach transformers, huggingface_hub or tokenizers, which is what differs
  # between the two locks (torch 2.14.1 and AllenNLP 2.10.1 are the same in both; the locked
  # lane runs every test, on the same code). Left out:
  # - tests/results and tests/analysis (the grid, search, compare, workers, budget and
  #   rounds orchestration, the report and the analyses: they drive `allennlp train` in
  #   subprocesses or in-process through the same trainer and read its files, the same on
  #   either stack, about 7 of this lane's 16 minutes on a 2-core machine);
  # - the README-commands runner (tests/test_readme_commands.py): the README's commands are
  #   for `make install`'s venv, the locked one, and drive tune-compare end to end;
  # - the two-node runs (`multi_node`: torch.distributed and AllenNLP's distributed trainer)
  #   and the real-data readers (`real_data`: the readers' code on the shared data), as the
  #   stock lane;
  # - of the ~80 shipped configs' trainings (test_config_trains_evaluates_and_predicts), all
  #   but one per mode and task kind on the transformer encoder (BERT fe, ft, sf, bitfit and
  #   lora on SST-2; pairs joint and separate, regression, tagging; the distributed ft) and the
  #   two ELMo ones that use the transformers-free path's CRF and frozen mix.
  #   The embedders, readers, tokenizers, predictors, models, training, configs' renders,
  #   commands, export and compat tests all run.
  configs="sst2_bert_fe or sst2_bert_ft or sst2_bert_sf or sst2_bert_bitfit or sst2_bert_lora"
  configs+=" or sick_e_bert_fe or sick_e_bert_fe_separate or sick_r_bert_ft or mrpc_bert_lora"
  configs+=" or conll2003_bert_fe or conll2003_bert_ft or distributed/sick_e_bert_ft"
  configs+=" or sick_e_elmo_fe or conll2003_elmo_ft_crf"
  make test LOCK="$LOCK" VENV="$VENV" PYTEST_ARGS="-m 'not multi_node and not real_data' \
    --ignore=tests/results --ignore=tests/analysis --ignore=tests/test_readme_commands.py \
    -k 'not test_config_trains_evaluates_and_predicts or $configs'"
fi
say "tests passed (wall $(( $(date +%s) - start )) s)"
