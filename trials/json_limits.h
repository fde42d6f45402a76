// Copyright 2026 SMoE Lab authors.
//
// File: trials/json_limits.h
//
// Guards for JSON text that crosses a process boundary (TRIAL.json, a
// trainer's event lines, the daemon's metric history). nlohmann::json copies
// and dumps values recursively, so a 100k-deep `[[[[...` crashes whoever
// copies or prints it (SIGSEGV on stack overflow); every reader checks the
// nesting first, without recursion, and refuses the text with a message.
//
// Thread-safety: stateless functions.
#ifndef SMOE_TRIALS_JSON_LIMITS_H_
#define SMOE_TRIALS_JSON_LIMITS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace smoe::trials {

// Deeper than any JSON the protocol defines (TRIAL.json and events nest at
// most 3 levels).
inline constexpr int kMaxJsonDepth = 64;

// InvalidArgument "<what> nests deeper than <max_depth> levels (at byte N)"
// when `text` opens more than `max_depth` arrays/objects at once (brackets
// inside strings do not count). OK otherwise, also for text that is not
// JSON: the parser reports that. Linear time, constant stack.
absl::Status CheckJsonDepth(absl::string_view text, absl::string_view what,
                            int max_depth = kMaxJsonDepth);

// Parses an event line (trials/events.h) or any other JSON line whose
// numbers may be written beyond the double range: like json::parse without
// exceptions (discarded on error, and when CheckJsonDepth fails), except that
// a number that overflows a double (1e999, -1e999) reads as +/-infinity, as
// IEEE 754, Python and JavaScript read it, instead of failing the whole line.
nlohmann::json ParseJsonLine(absl::string_view text);

}  // namespace smoe::trials

#endif  // SMOE_TRIALS_JSON_LIMITS_H_
