// Optimizers and schedules. Every run uses Adam with decoupled weight decay (AdamW; paper,
// appendix A). Learning rates, dropout, weight decay and epochs are the defaults to tune per
// task (`allennlp tune-search`); the paper tuned them on dev and did not publish its values.
local vars = import "vars.libsonnet";

// AllenNLP's confidence check (a bias right before a normalisation) inspects every trainable
// module, and so, while a BERT-family encoder trains, the pretrained architecture, which a config
// cannot change: it misfires on ALBERT, whose FFN output feeds its layer norm. Off where the
// encoder trains.
local trained_encoder_checks = false;

// Every trainer records the run's cost (trainable parameters, seconds per epoch, peak memory) in
// cost.json with the `tune_cost` callback, after any callback of its own (a trainer that adds
// callbacks puts them before `super.callbacks`).
local common(task, epochs) = {
  num_epochs: vars.epochs(epochs),
  validation_metric: task.metric,
  cuda_device: vars.cuda_device,
  checkpointer: {keep_most_recent_by_count: 1},
  callbacks: [{type: "tune_cost"}],
};

// BERT fine-tuning's optimizer and schedule (see bert_fine_tuning), with its epochs and rate.
local warmup_linear_decay(task, epochs, lr) = common(task, epochs) + {
  optimizer: {
    type: "adamw",
    lr: vars.lr(lr),
    weight_decay: vars.weight_decay(0.01),
    parameter_groups: [[["bias", "LayerNorm\\.weight"], {weight_decay: 0.0}]],
  },
  learning_rate_scheduler: {type: "slanted_triangular", cut_frac: 0.1, ratio: 1000},
  grad_norm: 1.0,
  run_confidence_checks: trained_encoder_checks,
};

// Issue #20's accelerator switches, all off by default, and then the trainer and the data loader
// are exactly the ones above: TUNE_AUTOCAST ("bfloat16"), TUNE_COMPILE ("default",
// "reduce-overhead"), TUNE_STATIC_SHAPES and TUNE_FUSED_ADAM (true/false). Any of them makes the
// trainer `tune_gradient_descent`, AllenNLP's `gradient_descent` with `autocast` and `compile`.
local fast_path_on =
  vars.autocast != null || vars.compile != null || vars.static_shapes || vars.fused_adam;

// An optimizer with every AdamW in it (`discriminative`'s inner one too) fused (`tune_adamw`).
local fused(optimizer) =
  if optimizer.type == "adamw" then optimizer + {type: "tune_adamw", fused: true}
  else if optimizer.type == "discriminative" then optimizer + {optimizer: fused(optimizer.optimizer)}
  else error "TUNE_FUSED_ADAM: optimizer " + optimizer.type + " has no fused variant";

// Batch kinds that `static_shapes` can fill up to the batch size: one class label per instance
// (padding rows get label -100, which the loss and metrics leave out). Regression scores and
// tags get their lengths padded only.
local fillable_kinds = ["classification", "pair_classification"];

{
  // A trainer with the switches above applied (itself when none is set).
  fast_path(trainer)::
    if !fast_path_on then trainer
    else trainer + {
      // tune_frozen_features is a tune_gradient_descent with the switches.
      type: if std.get(trainer, "type") == "tune_frozen_features" then trainer.type
            else "tune_gradient_descent",
      [if vars.autocast != null then "autocast"]: vars.autocast,
      [if vars.compile != null then "compile"]: {mode: vars.compile},
    } + (if vars.fused_adam then {optimizer: fused(trainer.optimizer)} else {}),

  // What TUNE_STATIC_SHAPES adds to the data loader (which validation shares): the
  // `static_shapes` collator, lengths padded to multiples of 8 and, for class labels, every
  // batch filled to `batch_size` rows.
  fast_path_loader(task, batch_size)::
    if !vars.static_shapes then {}
    else {
      collate_fn: {type: "static_shapes"}
                  + (if std.member(fillable_kinds, task.kind) then {rows: batch_size} else {}),
    },

  // A task network on frozen features: AdamW, halve the rate when dev stops improving (ESIM's
  // schedule), stop after 3 epochs without improvement.
  feature_extraction(task):: common(task, 10) + {
    optimizer: {type: "adamw", lr: vars.lr(1e-3), weight_decay: vars.weight_decay(0.0)},
    learning_rate_scheduler: {type: "reduce_on_plateau", factor: 0.5, mode: "max", patience: 0},
    grad_norm: 10.0,
    patience: vars.patience(3),
  },

  // A light frozen head (TUNE_FE_HEAD linear or mlp): the features of every instance computed
  // (or read from the pooled-feature cache) once, then steps of 64 rows over them
  // (`tune_frozen_features`); its epochs cost milliseconds, so up to 40 with early stopping
  // after 5 without improvement, at a higher rate than the paper's networks.
  frozen_head(task):: common(task, 40) + {
    type: "tune_frozen_features",
    feature_batch_size: vars.batch_size(64),
    optimizer: {type: "adamw", lr: vars.lr(3e-3), weight_decay: vars.weight_decay(0.0)},
    learning_rate_scheduler: {type: "reduce_on_plateau", factor: 0.5, mode: "max", patience: 1},
    grad_norm: 10.0,
    patience: vars.patience(5),
  },

  // BERT: Devlin et al.'s recipe. Linear warmup over the first 10% of the steps, then linear
  // decay (slanted_triangular with a large ratio ends near 0); no weight decay on biases and
  // LayerNorm weights.
  bert_fine_tuning(task):: warmup_linear_decay(task, 3, 2e-5),

  // Parameter-efficient fine-tuning, `mode` "bitfit" (only the encoder's biases train) or "lora"
  // (low-rank adapters train): BERT fine-tuning's recipe above, the head at the same rate, but
  // with the much larger rates these modes want, as only a few encoder weights move. BitFit:
  // 3e-3, the better of 1e-3 (the top of Ben Zaken et al. 2022's range) and 3e-3 on SICK-E dev
  // with all-MiniLM-L6-v2 (docs/results/NOTEBOOK.md, section 9). LoRA: 1.5e-3, the better of 5e-4
  // (Hu et
  // al. 2021, RoBERTa-base GLUE, 4e-4 to 5e-4) and 1.5e-3 there. 5 epochs. TUNE_LR and
  // TUNE_EPOCHS override them. ELMo (bitfit only) trains the same way, without its fine-tuning
  // cells' discriminative rates or gradual unfreezing.
  parameter_efficient(task, mode):: warmup_linear_decay(task, 5, {bitfit: 3e-3, lora: 1.5e-3}[mode]),

  // ELMo: discriminative learning rates (each group 0.4x the one above it), a slanted
  // triangular schedule, and for SST-2 and NER gradual unfreezing (paper, appendix A.2).
  elmo_fine_tuning(task, gradual_unfreezing):: common(task, 5) + {
    optimizer: {
      type: "discriminative",
      decay: 0.4,
      head_lr: vars.head_lr(1e-3),
      optimizer: {type: "adamw", lr: vars.lr(5e-4), weight_decay: vars.weight_decay(0.01)},
    },
    learning_rate_scheduler: {type: "slanted_triangular", cut_frac: 0.1, ratio: 32},
    grad_norm: 5.0,
  } + (if gradual_unfreezing then {callbacks: [{type: "gradual_unfreezing"}] + super.callbacks}
       else {}),

  // Stack-then-finetune: train the head on the frozen encoder, then fine-tune everything; the
  // frozen phase ends after TUNE_FROZEN_EPOCHS epochs or once train - dev exceeds TUNE_MAX_GAP.
  // The schedule (the fine-tuning one of the encoder) restarts at the switch, so phase 2 gets
  // its own warmup and decay. BERT keeps its fine-tuning rule of no weight decay on biases and
  // LayerNorm weights (ELMo's fine-tuning cells have none, and neither has its sf cell).
  stack_then_finetune(task, encoder):: common(task, vars.frozen_epochs(2) + 3) + {
    optimizer: {
      type: "discriminative",
      decay: if encoder.name == "elmo" then 0.4 else 1.0,
      head_lr: vars.head_lr(1e-3),
      [if encoder.name == "bert" then "no_decay"]: ["bias", "LayerNorm\\.weight"],
      optimizer: {
        type: "adamw",
        lr: vars.lr(if encoder.name == "elmo" then 5e-4 else 2e-5),
        weight_decay: vars.weight_decay(0.01),
      },
    },
    callbacks: [{
      type: "stack_then_finetune",
      frozen_epochs: vars.frozen_epochs(2),
      max_gap: vars.max_gap(0.05),
    }] + super.callbacks,
    learning_rate_scheduler: {
      type: "slanted_triangular", cut_frac: 0.1, ratio: if encoder.name == "elmo" then 32 else 1000,
    },
    grad_norm: 1.0,
    run_confidence_checks: trained_encoder_checks,
  },
}
