// Copyright 2026 SMoE Lab authors.
//
// File: worker/trainer/skillmix_local_model.h
//
// The ChatModelFactory smoe-trainer uses for the `skillmix` kind's student
// and local grader: a Mixtral-format model directory loaded by the LibTorch
// runtime (MixtralChatModel, worker/trainer/mixtral_chat_model.h) at the
// requested EPT; device "cpu" runs fp32, "cuda" bf16 on the first visible
// GPU. LibTorch exceptions are caught and returned as Internal. Running as
// one of several ranks (SMOE_WORLD_SIZE > 1) is InvalidArgument: the
// expert-parallel leader/follower path is not wired into the trial yet.
#ifndef SMOE_WORKER_TRAINER_SKILLMIX_LOCAL_MODEL_H_
#define SMOE_WORKER_TRAINER_SKILLMIX_LOCAL_MODEL_H_

#include "worker/trainer/skillmix_trial.h"

namespace smoe::trainer {

ChatModelFactory LocalChatModelFactory();

}  // namespace smoe::trainer

#endif  // SMOE_WORKER_TRAINER_SKILLMIX_LOCAL_MODEL_H_
