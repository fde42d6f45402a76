// Copyright 2026 SMoE Lab authors.
//
// File: worker/trainer/mixtral_tools.h
//
// smoe-trainer subcommands for the Mixtral runtime (worker/model/mixtral):
//
//   smoe-trainer make-random-model --out DIR [--shape tiny|mixtral-8x7b|custom]
//       [--layers N] [--hidden H] [--intermediate F] [--heads N]
//       [--kv-heads N] [--experts E] [--ept K] [--vocab V]
//       [--max-position N] [--sliding-window W] [--dtype f32|bf16|f16]
//       [--layout classic|packed] [--max-shard-mb MB] [--seed S]
//       [--no-tokenizer]
//     Writes config.json (HF format), the safetensors weights (sharded with
//     an index when larger than --max-shard-mb, default 5000) streaming one
//     tensor at a time, and tokenizer.model (SentencePiece BPE trained on a
//     generated corpus, vocab = the shape's vocab_size, soft above 4096).
//     `custom` starts from `tiny`; any size flag overrides any shape.
//
//   smoe-trainer mixtral-logits --model DIR --tokens 1,2,3 [--ept 1,2,8]
//       --out FILE [--device cpu|cuda] [--dtype f32|bf16|f16]
//     Writes FILE (safetensors): "tokens" [T] F32 and, per EPT K,
//     "logits_ept{K}" [T, V] F32 of one unpadded forward pass. Used by
//     bench/mixtral_peer_check.py.
//
// Flags are CLI11 options (common/flags.h): a bad value is reported as
// "--flag: 'value' (reason)". Both commands return a process exit code (0 ok,
// 64 usage or bad input, 1 other errors) and print errors to stderr.
#ifndef SMOE_WORKER_TRAINER_MIXTRAL_TOOLS_H_
#define SMOE_WORKER_TRAINER_MIXTRAL_TOOLS_H_

#include "common/flags.h"

namespace smoe::trainer {

// Adds the subcommand to `app` (smoe-trainer's); run() runs it once parsed.
Command AddMakeRandomModelCommand(CLI::App* app);
Command AddMixtralLogitsCommand(CLI::App* app);

// Parses and runs one subcommand; argv[0] is the subcommand name.
int RunMakeRandomModel(int argc, char** argv);
int RunMixtralLogits(int argc, char** argv);

}  // namespace smoe::trainer

#endif  // SMOE_WORKER_TRAINER_MIXTRAL_TOOLS_H_
