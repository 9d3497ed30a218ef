"""
Planning: what a grid or a comparison will cost, before anything trains. Nothing here trains or
reads a run's results, except the cost model's fit, which reads finished runs' costs, and the
calibration, which times a few batches of each cell's model (no optimizer state or weights are
kept).

One job per module, bottom to top:

- `cost_model`: `ModeCost` and `COST_MODEL`, seconds per epoch and peak memory by mode (and
  task head) from the size of the work;
- `encoder_size`: the encoder's layers, width and parameters from its `config.json` alone;
- `data_count`: a split's instances, sequences and wordpieces as the config's reader yields them;
- `plan`: `CellPlan` and `plan_cell`, the estimate for one config (its data, encoder, feature
  cache and its budget, time and memory), and what a grid refuses on (`budget_failures`,
  `plan_problems`);
- `calibrate`: the time per epoch measured on this machine (a few training batches of the cell's
  own model timed, scaled to its counted instances), replacing the cost model's;
- `render`: the plan as the Markdown table tune-grid and tune-compare print, its total, and a
  finished run's time against its plan (`estimate_error`);
- `fit`: `fit_cost_model` and `format_cost_model`, the cost model from run directories.
"""
