// Copyright 2026 SMoE Lab authors.
//
// The `smoe` command line. Subcommands are added by the orchestration and
// SRAVEN issues; until then `smoe up` names what is missing.
#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0) {
    std::printf(
        "usage: smoe <command>\n  up    run a local sweep + dashboard\n");
    return argc < 2 ? 64 : 0;
  }
  if (std::strcmp(argv[1], "up") == 0) {
    std::fprintf(stderr,
                 "smoe up: not built yet: the coordinator, worker daemon and "
                 "SRAVEN trainer (issues 3 and 4)\n");
    return 69;  // EX_UNAVAILABLE
  }
  std::fprintf(stderr, "smoe: unknown command '%s'\n", argv[1]);
  return 64;
}
