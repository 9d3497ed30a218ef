# shellcheck shell=bash
# The peft stage's recipes (docs/results/NOTEBOOK.md section 9), in one place: sourced by
# scripts/real_results.sh (the runs on this machine) and scripts/device/gpu_check.sh (the same
# cells on a lent GPU). Source it at the top level of a script: `declare -A` inside a function
# would make the arrays local to it.
#   SUBSET[task]         the training subset outside the full stage (first 8k / 4k sentences)
#   PEFT_SETTINGS[mode]  ft and sf with the MiniLM recipe of section 7 (1e-4 x 5 epochs; sf: 2
#                        frozen + 5); fe, bitfit and lora at the configs' defaults (bitfit's and
#                        lora's are the rates `real_results.sh peft_lr` chose, set in
#                        trainers.libsonnet only; PEFT_BITFIT_LR or PEFT_LORA_LR overrides one)
declare -A SUBSET=(
  [sst2]="--ext-var TUNE_MAX_INSTANCES=8000"
  [conll2003]="--ext-var TUNE_MAX_INSTANCES=4000"
)
declare -A PEFT_SETTINGS=(
  [fe]=""
  [ft]="--ext-var TUNE_LR=1e-4 --ext-var TUNE_EPOCHS=5"
  [bitfit]="${PEFT_BITFIT_LR:+--ext-var TUNE_LR=$PEFT_BITFIT_LR}"
  [lora]="${PEFT_LORA_LR:+--ext-var TUNE_LR=$PEFT_LORA_LR}"
  [sf]="--ext-var TUNE_LR=1e-4 --ext-var TUNE_EPOCHS=7"
)
