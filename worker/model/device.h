// Copyright 2026 SMoE Lab authors.
//
// File: worker/model/device.h
//
// Where the model's and the communicator's tensors live (issue 13: one code
// path, only the launch differs). Pure decisions, no device queries, so the
// lines a GPU run takes through them run in CI too.
#ifndef SMOE_WORKER_MODEL_DEVICE_H_
#define SMOE_WORKER_MODEL_DEVICE_H_

#include <torch/types.h>

#include "kernels/all_to_all/communicator.h"

namespace smoe::model {

// The device on which `comm`'s collective buffers live when the model runs on
// `model_device`: the CPU for a host communicator (local, gloo), the model's
// own device for a device-memory one (nccl: the rank's GPU, cuda:N). One
// rule, no device test: with the fake CUDA runtime + NCCL of tests/fakes,
// whose "device memory" is host memory, a CPU model hands the unchanged
// NcclCommunicator its CPU tensors through these same lines. Callers pick a
// device communicator only for a CUDA model.
torch::Device CommDevice(const kernels::Communicator& comm,
                         torch::Device model_device);

}  // namespace smoe::model

#endif  // SMOE_WORKER_MODEL_DEVICE_H_
