#!/usr/bin/env bash
# GPU check on the lent device machine (a development tool, not part of the product), with what
# scripts/device/build_carry.sh put in .devenv/. Usage: gpu_check.sh STAGE...
#   env     unpack the carried site-packages, data and stubs; print versions
#   tests   the config tests with TUNE_CUDA_DEVICE=0 (every config trains on the GPU)
#   grid    tune-grid over $GRID_CONFIGS with $GRID_SEEDS on the real MiniLM (fp16-stored)
#   equal_budget
#           scripts/equal_budget.sh (tune-compare --budget) for every task in $EB_TASKS and mode in $EB_MODES
#           at once, one process per (task, mode) with its own results folder and Optuna study,
#           $EB_TRIALS trials then $EB_SEEDS seeds each, all stopped after $EB_TIMEOUT s; the run
#           folders' small files come back as eb_<task>.tar.gz (no weights, archives or caches),
#           the logs as eb_logs.tar.gz. Rerun to resume. Needs optuna and its needs in
#           site.tar.xz (build_carry.sh puts them there).
#   bench_modes
#           bench/bench_modes.py on the GPU: ft, bitfit and lora, one epoch each on $BENCH_PAIRS
#           SICK-E pairs (default 4000), each in its own process, medians of 2 (bench_modes.txt)
#   peft    scripts/real_results.sh peft's cells (the recipes of scripts/peft_recipes.sh) for every
#           task in $PEFT_TASKS, mode in $PEFT_MODES and seed in $PEFT_SEEDS, then the settings in
#           $PEFT_SEARCH ("MODE:RATE:EPOCHS ..." on $PEFT_SEARCH_TASK, the same seeds), one process
#           per run, $PEFT_PROCS at a time in that order; a run is given up $PEFT_TIMEOUT s after
#           the stage began (one not started by then is skipped). Each run has its own results
#           folder (tune-grid locks one per writer), /tmp/peft/<setting>/<config>_s<seed>/<config>/
#           seed_<seed>, where the setting is "recipe" or MODE_lrRATE_epEPOCHS; their small files
#           come back as peft_runs.tar.gz (no weights, archives or caches), the logs as
#           peft_logs.tar.gz. Seconds per epoch are shared-machine times; peak GPU memory is each
#           run's own.
#   speed   bench/bench_gpu.py (issue #47): the fast path against the plain eager loop for the
#           6 x 384 (the real MiniLM) and 12 x 768 (random BERT-base shape) encoders, the cached fe
#           epoch against ft's, and sf's re-capture, in one process, no new step after
#           $SPEED_DEADLINE s (default 330); results as speed.jsonl, the log (dynamo's graph breaks,
#           recompilations and cudagraph notes) as speed.log; $SPEED_ARGS adds options
# GPU_INDEX (default 0) is the device bench_modes and peft train on (-1: the CPU, to try a stage
# here with PYTHONPATH and the data pointed at this machine's).
set -uo pipefail
cd "$(dirname "$0")/../.."
if [ -f .devenv/site_spacy.tar.xz ]; then
  [ -d /tmp/site_spacy ] || tar -xJf .devenv/site_spacy.tar.xz -C /tmp
  export DEV_STUBS=boto3,botocore,google.cloud,google.api_core,google.auth,beaker,nltk,word2number,rouge,sacremoses,ftfy
fi
export PYTHONPATH=/tmp/site:/tmp/site_spacy:$PWD/scripts/device/stubs:$PWD
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
[ -d /tmp/site ] || tar -xJf .devenv/site.tar.xz -C /tmp
[ -d /tmp/data ] || { mkdir -p /tmp/data && tar -xJf .devenv/data.tar.xz -C /tmp/data; }
export TUNE_DATA_DIR=/tmp/data
for stage in "$@"; do
  start=$(date +%s)
  case $stage in
    env)
      nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
      python3 -c "import sys, torch, transformers, tokenizers, peft, allennlp, allennlp_models, allennlp_tune; print(sys.version); print('torch', torch.__version__, torch.cuda.is_available(), 'transformers', transformers.__version__, 'tokenizers', tokenizers.__version__, 'peft', peft.__version__, peft.__file__)"
      ;;
    tests)
      TUNE_CUDA_DEVICE=0 timeout ${TEST_TIMEOUT:-300} python3 -m pytest -q -p no:cacheprovider \
        \
        ${TEST_ARGS:-tests/configs/test_training_configs.py -k test_config_trains} 2>&1 | tee "$OUT/tests.log" | tail -25
      ;;
    grid)
      timeout ${GRID_TIMEOUT:-420} python3 -m allennlp tune-grid $GRID_CONFIGS --seeds $GRID_SEEDS \
        --results-dir /tmp/runs --no-progress --ext-var TUNE_BERT_MODEL=$PWD/.devenv/minilm \
        --ext-var TUNE_POOLING=mean --ext-var TUNE_CUDA_DEVICE=0 ${GRID_ARGS:-} 2>&1 | tail -30
      (cd /tmp && tar -czf "$OUT/runs.tar.gz" --exclude='*.tar.gz' --exclude='*.th' \
        --exclude='feature_cache*' runs)
      ;;
    equal_budget)
      # equal_budget.sh calls $BIN/allennlp (tune-compare --budget).
      # (Wrappers, not links: a link to the image's venv python loses that venv's packages.)
      mkdir -p /tmp/bin /tmp/eb
      printf '#!/bin/sh\nexec python3 "$@"\n' >/tmp/bin/python
      printf '#!/bin/sh\nexec python3 -m allennlp "$@"\n' >/tmp/bin/allennlp
      chmod +x /tmp/bin/python /tmp/bin/allennlp
      # One thread each: up to 12 processes share the machine's 16 cores.
      export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
      for task in ${EB_TASKS:-sick_e sick_r mrpc sts_b}; do
        for mode in ${EB_MODES:-fe ft sf}; do
          BIN=/tmp/bin ENCODER_MODEL=$PWD/.devenv/minilm EXT_VARS="TUNE_POOLING=mean TUNE_CUDA_DEVICE=0" \
            timeout "${EB_TIMEOUT:-480}" bash scripts/equal_budget.sh --modes "$mode" \
            --results "/tmp/eb/$task/$mode" "$task" "${EB_TRIALS:-4}" "${EB_SEEDS:-5}" \
            >"/tmp/eb/$task.$mode.log" 2>&1 &
        done
      done
      wait
      tail -n 3 /tmp/eb/*.log
      # The small files only (metrics, configs, predictions, logs, the studies), one archive per
      # task: all of it, caches and archives included, is over the 16 MB a returned file may be.
      cd /tmp
      for task in ${EB_TASKS:-sick_e sick_r mrpc sts_b}; do
        find "eb/$task" -path '*feature_cache*' -prune -o -type f \( -name '*.json' -o \
          -name '*.jsonl' -o -name '*.env' -o -name 'optuna.db' -o -name '*.log' \) -print |
          tar -czf "$OUT/eb_$task.tar.gz" -T -
      done
      tar -czf "$OUT/eb_logs.tar.gz" eb/*.log
      cd - >/dev/null
      ;;
    bench_modes)
      BENCH_ARGS="--cuda-device ${GPU_INDEX:-0} --model $PWD/.devenv/minilm --pairs ${BENCH_PAIRS:-4000}"
      # shellcheck disable=SC2086
      timeout "${BENCH_TIMEOUT:-240}" python3 bench/bench_modes.py $BENCH_ARGS 2>&1 |
        tee "$OUT/bench_modes.txt" | grep -E "^\||^all-MiniLM|^every run|Error|Traceback"
      ;;
    speed)
      # shellcheck disable=SC2086
      TORCH_LOGS="graph_breaks,recompiles,perf_hints" timeout "${SPEED_TIMEOUT:-450}" python3 \
        bench/bench_gpu.py --model "$PWD/.devenv/minilm" --data /tmp/data --out "$OUT/speed.jsonl" \
        --device "${GPU_INDEX:-0}" --deadline "${SPEED_DEADLINE:-330}" ${SPEED_ARGS:-} \
        >"$OUT/speed.out" 2>"$OUT/speed.log"
      python3 bench/bench_gpu.py --summarise "$OUT/speed.jsonl"
      grep -hE "^[A-Za-z]*(Error|Exception)|compile failed|skipping cudagraphs|Recompiling" \
        "$OUT/speed.log" "$OUT/speed.out" | cut -c1-300 | sort | uniq -c | sort -rn | head -12
      ;;
    peft)
      # shellcheck source=../peft_recipes.sh
      source scripts/peft_recipes.sh
      PEFT_START=$(date +%s)
      export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 PEFT_START PEFT_DEADLINE=$((PEFT_START + ${PEFT_TIMEOUT:-420}))
      mkdir -p /tmp/peft/logs
      peft_run() { # SETTING CONFIG SEED EXT_ARG...
        local setting=$1 config=$2 seed=$3 left=$((PEFT_DEADLINE - $(date +%s)))
        shift 3
        [ "$left" -gt 30 ] || { echo "skipped $setting $config $seed: deadline"; return 0; }
        timeout "$left" python3 -m allennlp tune-grid "training_config/$config.jsonnet" \
          --seeds "$seed" --results-dir "/tmp/peft/$setting/${config}_s$seed" --no-progress \
          --ext-var TUNE_BERT_MODEL="$PWD/.devenv/minilm" --ext-var TUNE_POOLING=mean \
          --ext-var TUNE_CUDA_DEVICE="${GPU_INDEX:-0}" "$@" >"/tmp/peft/logs/$setting.$config.$seed.log" 2>&1
        local rc=$?
        echo "$setting $config seed $seed: exit $rc at $(($(date +%s) - PEFT_START)) s"
      }
      export -f peft_run
      {
        for task in ${PEFT_TASKS:-sst2 conll2003}; do
          for mode in ${PEFT_MODES:-sf fe ft lora bitfit}; do
            for seed in ${PEFT_SEEDS:-1 2 3}; do
              echo "recipe ${task}_bert_$mode $seed ${PEFT_SETTINGS[$mode]} ${SUBSET[$task]:-}"
            done
          done
        done
        for setting in ${PEFT_SEARCH:-}; do
          IFS=: read -r mode rate epochs <<<"$setting"
          for seed in ${PEFT_SEEDS:-1 2 3}; do
            echo "${mode}_lr${rate}_ep$epochs ${PEFT_SEARCH_TASK:-conll2003}_bert_$mode $seed" \
              "--ext-var TUNE_LR=$rate --ext-var TUNE_EPOCHS=$epochs ${SUBSET[${PEFT_SEARCH_TASK:-conll2003}]:-}"
          done
        done
      } >/tmp/peft/jobs.txt
      cat /tmp/peft/jobs.txt
      # shellcheck disable=SC2016
      xargs -P "${PEFT_PROCS:-16}" -L 1 bash -c 'peft_run "$@"' _ </tmp/peft/jobs.txt
      grep -h "best_validation\|Traceback\|Error" /tmp/peft/logs/*.log | sort | uniq -c | sort -rn | head -20
      (cd /tmp/peft && find . -path '*feature_cache*' -prune -o -type f \( -name '*.json' -o \
        -name '*.jsonl' -o -name 'jobs.txt' \) -print | tar -czf "$OUT/peft_runs.tar.gz" -T -)
      (cd /tmp/peft && tar -czf "$OUT/peft_logs.tar.gz" logs)
      ;;
  esac
  echo "== stage $stage: $(( $(date +%s) - start )) s"
done
