// Stack-then-finetune on several processes: the sf cell plus the `distributed` block of
// sick_e_bert_ft.jsonnet beside this file (see there for GPUs, nodes and their variables).
//
// The sf embedder starts frozen (feature extraction, with the feature cache), and DDP only
// synchronises the weights that require gradients when it wraps the model. The `tune_torch`
// accelerator therefore switches the embedder to freezing by gradient masking before wrapping:
// its weights keep `requires_grad`, and `stack_then_finetune` discards the frozen groups'
// gradients. Phase 1 still runs the frozen encoder in eval mode, without autograd and from the
// cache, as in one process.
local cell = import "../sick_e_bert_sf.jsonnet";
local ft = import "sick_e_bert_ft.jsonnet";

cell + {
  distributed: ft.distributed + {
    ddp_accelerator: {type: "tune_torch", find_unused_parameters: true},
  },
  // Each process gets its device from `cuda_devices`.
  trainer: std.mergePatch(cell.trainer, {cuda_device: null}),
}
