#!/usr/bin/env bash
# CI, stock lane (issue 18): allennlp-tune inside an AllenNLP 2.10.1 environment as an existing
# AllenNLP user has it, not the pinned lock of the locked lane (`make install`, Python 3.11).
#
#   python3.10 -m venv .venv-stock
#   pip install allennlp==2.10.1 allennlp-models==2.10.1 "numpy<2"   # torch 1.12.1, transformers 4.20.1
#   pip install -e ".[search,postgres]"                               # must not change that stack
#
# then the test suite, or the documented subset below (STOCK_TESTS=all runs everything), and
# the pass / skip / fail counts. Idempotent: the venv is kept in .venv-stock/ (git-ignored) and
# reinstalled only when setup.py or pyproject.toml changes; STOCK_VENV picks another folder.
#
# Python 3.10: $PYTHON310, else python3.10 on PATH, else pyenv's 3.10 (installed with
# `pyenv install 3.10` when pyenv is there). Without any of them the lane stops and says how to
# get one: allennlp 2.10.1 needs torch<1.13, which has no wheels for Python >= 3.11.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${STOCK_VENV:-.venv-stock}
say() { echo "stock lane: $*"; }

find_python310() {
  if [[ -n "${PYTHON310:-}" ]]; then echo "$PYTHON310"; return; fi
  # (a pyenv shim on PATH may exist without a 3.10 selected: try it before taking it)
  if python3.10 --version >/dev/null 2>&1; then command -v python3.10; return; fi
  local found
  found=$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.10.*/bin/python3.10 2>/dev/null | tail -1)
  if [[ -z "$found" ]] && command -v pyenv >/dev/null; then
    say "no Python 3.10: installing one with pyenv (pyenv install -s 3.10)" >&2
    pyenv install -s 3.10 >&2
    found=$(ls -d "$(pyenv root)"/versions/3.10.*/bin/python3.10 2>/dev/null | tail -1)
  fi
  echo "$found"
}

PY310=$(find_python310)
if [[ -z "$PY310" ]]; then
  say "needs Python 3.10 (stock AllenNLP 2.10.1 needs torch<1.13, which has no wheels for"
  say "Python >= 3.11). Install it as a user would: 'pyenv install 3.10' (pyenv.run), or the"
  say "python3.10 and python3.10-venv packages (Debian/Ubuntu, deadsnakes PPA), then rerun, or"
  say "set PYTHON310=/path/to/python3.10."
  exit 2
fi

STACK="torch transformers tokenizers numpy allennlp allennlp-models huggingface-hub"
versions() { "$VENV/bin/python" -m pip list --disable-pip-version-check --format=freeze 2>/dev/null; }
stack_versions() { versions | grep -iE "^($(echo "$STACK" | tr ' ' '|'))==" | sort; }

stamp="$VENV/.installed-$(cat setup.py pyproject.toml | sha256sum | cut -c1-16)"
if [[ ! -f "$stamp" ]]; then
  say "creating $VENV with $("$PY310" --version) ($PY310)"
  rm -rf "$VENV"
  "$PY310" -m venv "$VENV"
  PIP=("$VENV/bin/python" -m pip install --disable-pip-version-check -q)
  # wheel: `pip wheel --no-build-isolation` (tests/configs/test_task_files.py) needs it with
  # Python 3.10's setuptools. setuptools: such a build uses the venv's, pyproject.toml's metadata
  # needs setuptools >= 77 and Python 3.10's venv has 65.5, so the locks' pin (80.9.0: below 82,
  # which removed pkg_resources, which py-rouge, an allennlp-models dependency, imports).
  "${PIP[@]}" --upgrade pip wheel "$(grep -E '^setuptools==' requirements/lock.txt)"
  # numpy<2: allennlp 2.10.1 does not pin it, and with numpy 2 `import allennlp` itself fails.
  "${PIP[@]}" allennlp==2.10.1 allennlp-models==2.10.1 "numpy<2"
  stack_versions >"$VENV/stack-before.txt"
  versions | sort >"$VENV/all-before.txt"
  "${PIP[@]}" -e ".[search,postgres]"
  stack_versions >"$VENV/stack-after.txt"
  versions | sort >"$VENV/all-after.txt"
  if ! diff -u "$VENV/stack-before.txt" "$VENV/stack-after.txt"; then
    say "FAIL: pip install -e '.[search,postgres]' changed the stock stack (above):"
    say "pyproject.toml asks for something torch 1.12.1 / transformers 4.20.1 cannot satisfy"
    exit 1
  fi
  say "pip install -e '.[search,postgres]' kept the stack; what else it changed (- before, + after):"
  diff "$VENV/all-before.txt" "$VENV/all-after.txt" | grep '^[<>]' | sed 's/^</  -/; s/^>/  +/' || true
  touch "$stamp"
fi
say "stack: $(stack_versions | awk -F== '{printf "%s %s, ", $1, $2}')python $("$VENV/bin/python" -c 'import platform; print(platform.python_version())')"

# pytest-xdist, as in the locked lane's `make test` (one worker per CPU); not part of the stock
# stack, so it is added after the check above, and to a venv made before it was used here.
if ! "$VENV/bin/python" -c "import xdist" 2>/dev/null; then
  # The versions of requirements/lock.txt, so the two lanes run the same pytest-xdist.
  mapfile -t XDIST < <(grep -E '^(pytest-xdist|execnet)==' requirements/lock.txt)
  "$VENV/bin/python" -m pip install --disable-pip-version-check -q "${XDIST[@]}"
fi

# The tests. `allennlp` subprocesses must be this venv's.
export PATH="$PWD/$VENV/bin:$PATH"
# STOCK_TESTS=all: the whole suite. Default: the subset below, so that both lanes together stay
# well inside CI's time limit (the locked lane already runs every test on the modern stack).
if [[ "${STOCK_TESTS:-subset}" == all ]]; then
  SELECTION=(tests)
else
  # The subset: every test file except tests/results/test_compare.py (tune-compare end to end,
  # about 3 minutes of trainings) and tests/test_readme_commands.py (below), with six of the
  # ~150 shipped configs of test_config_trains_evaluates_and_predicts (BERT fe, ft, sf and
  # bitfit, ELMo fe and ft+CRF, plus distributed/sick_e_bert_ft; all ~150 take about 6
  # minutes), and without the multi_node and real_data markers (the locked lane runs all of
  # these).
  configs="sst2_bert_fe or sick_e_bert_ft or sick_r_bert_sf or mrpc_bert_bitfit"
  configs+=" or conll2003_elmo_ft_crf or sick_e_elmo_fe"
  # tune-export's LoRA round trips skip themselves here, saying peft is missing (the [lora]
  # extra cannot be installed on torch 1.12). tests/test_readme_commands.py: the README's
  # commands are for `make install`'s venv; they run in the locked and modern lanes.
  # tests/results/test_budget_workers.py, test_workers.py and test_grid_writers.py: worker
  # processes sharing --budget's searches or a grid, and the grid's writers under kill -9
  # (about 3 minutes here), orchestration that drives the same trainer on any stack; the locked
  # lane runs them.
  SELECTION=(tests -m "not multi_node and not real_data" --ignore=tests/results/test_compare.py
    --ignore=tests/test_readme_commands.py --ignore=tests/results/test_budget_workers.py
    --ignore=tests/results/test_workers.py --ignore=tests/results/test_grid_writers.py
    -k "not test_config_trains_evaluates_and_predicts or $configs")
fi
say "pytest ${SELECTION[*]}"
log=$(mktemp)
start=$(date +%s)
set +e
"$VENV/bin/python" -m pytest -q -p no:cacheprovider -rfEs -n "${PYTEST_WORKERS:-auto}" \
  --dist loadfile "${SELECTION[@]}" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
counts=$(grep -E '^(=+ )?[0-9]+ (passed|failed|skipped|error)' "$log" | tail -1 | sed 's/=//g; s/^ *//; s/ *$//')
say "${counts:-no summary line} (wall $(( $(date +%s) - start )) s)"
rm -f "$log"
exit "$status"
