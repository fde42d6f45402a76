// Copyright 2026 SMoE Lab authors.
#include "cli/sraven_cmd.h"

namespace smoe::cli {

int RunSravenCommand(const std::vector<std::string>& args, std::ostream& out,
                     std::ostream& err) {
  (void)args;
  (void)out;
  err << "smoe sraven: not implemented yet\n";
  return 69;
}

}  // namespace smoe::cli
