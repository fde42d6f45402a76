// Copyright 2026 SMoE Lab authors.
//
// File: worker/eval/skillmix/testdata_util.h
//
// Test-only helpers: paths of worker/eval/skillmix/testdata and the golden
// catalog. Included by *_test.cc only.
#ifndef SMOE_WORKER_EVAL_SKILLMIX_TESTDATA_UTIL_H_
#define SMOE_WORKER_EVAL_SKILLMIX_TESTDATA_UTIL_H_

#include <cstdlib>
#include <string>

namespace smoe::skillmix::testing {

// $SMOE_SOURCE_DIR/worker/eval/skillmix/testdata/<name> (ctest sets the
// variable; "." otherwise).
inline std::string TestdataPath(const std::string& name) {
  const char* dir = std::getenv("SMOE_SOURCE_DIR");
  return std::string(dir != nullptr ? dir : ".") +
         "/worker/eval/skillmix/testdata/" + name;
}

}  // namespace smoe::skillmix::testing

#endif  // SMOE_WORKER_EVAL_SKILLMIX_TESTDATA_UTIL_H_
