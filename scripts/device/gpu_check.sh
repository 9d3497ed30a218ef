#!/usr/bin/env bash
# GPU check on the lent device machine (a development tool, not part of the product), with what
# scripts/device/build_carry.sh put in .devenv/. Usage: gpu_check.sh STAGE...
#   env     unpack the carried site-packages, data and stubs; print versions
#   tests   the config tests with TUNE_CUDA_DEVICE=0 (every config trains on the GPU)
#   grid    tune-grid over $GRID_CONFIGS with $GRID_SEEDS on the real MiniLM (fp16-stored)
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
      python3 -c "import sys, torch, transformers, tokenizers, allennlp, allennlp_models, allennlp_tune; print(sys.version); print('torch', torch.__version__, torch.cuda.is_available(), 'transformers', transformers.__version__, 'tokenizers', tokenizers.__version__)"
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
  esac
  echo "== stage $stage: $(( $(date +%s) - start )) s"
done
