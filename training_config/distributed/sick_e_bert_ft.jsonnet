// Multi-GPU and multi-node training: any cell plus AllenNLP's `distributed` block. Copy this
// file and change the import to distribute another cell.
//
//   One machine, GPUs 0-3:
//     TUNE_CUDA_DEVICES='[0,1,2,3]' allennlp train training_config/distributed/sick_e_bert_ft.jsonnet -s OUT
//   Two machines with 4 GPUs each (run on both; --node-rank 0 on the primary):
//     TUNE_CUDA_DEVICES='[0,1,2,3]' TUNE_NUM_NODES=2 TUNE_PRIMARY_ADDRESS=10.0.0.1 \
//     TUNE_PRIMARY_PORT=29500 allennlp train ... -s OUT --node-rank 0   (1 on the other)
//   CPU processes, for a test: TUNE_CUDA_DEVICES='[-1,-1]' (gloo).
//
// TUNE_BATCH_SIZE is per process. Frozen encoder groups get no gradient, so DDP must be told
// to expect unused parameters; allennlp-tune's callbacks freeze by masking under DDP.
local vars = import "../../allennlp_tune/configs/vars.libsonnet";
local cell = import "../sick_e_bert_ft.jsonnet";

cell + {
  distributed: {
    cuda_devices: vars.integers("TUNE_CUDA_DEVICES", [0, 1], min=-1),
    num_nodes: vars.number("TUNE_NUM_NODES", 1, integer=true, min=1),
    primary_address: vars.get("TUNE_PRIMARY_ADDRESS", "127.0.0.1"),
    primary_port: vars.number("TUNE_PRIMARY_PORT", null, integer=true, min=1, max=65535),  // null: a free port, one node only
    ddp_accelerator: {type: "torch", find_unused_parameters: true},
  },
  // Each process gets its device from `cuda_devices`.
  trainer: std.mergePatch(cell.trainer, {cuda_device: null}),
}
