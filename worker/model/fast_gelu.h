// Copyright 2026 SMoE Lab authors.
//
// File: worker/model/fast_gelu.h
//
// GELU with the tanh approximation, exactly the formula of
// torch::gelu(x, "tanh") and its backward, for float32/float64 CPU tensors,
// as one autograd op whose loops vectorise (issue 19: LibTorch's CPU gelu
// calls Sleef's 1-ulp tanhf, 4-10 % of a SRAVEN step). tanh is computed
// from one exp (cpu_math.h): within ~2 ulp of 1 + tanh, i.e. GELU within a
// few float ulps of LibTorch's. float64 uses std::tanh (gradient checks).
#ifndef SMOE_WORKER_MODEL_FAST_GELU_H_
#define SMOE_WORKER_MODEL_FAST_GELU_H_

#include <torch/types.h>

namespace smoe::model {

// True for CPU float32/float64 tensors.
bool FastGeluSupported(const torch::Tensor& x);

// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), differentiable in x.
// Other devices/dtypes: torch::gelu(x, "tanh").
torch::Tensor GeluTanh(const torch::Tensor& x);

}  // namespace smoe::model

#endif  // SMOE_WORKER_MODEL_FAST_GELU_H_
