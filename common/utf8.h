// Copyright 2026 SMoE Lab authors.
//
// File: common/utf8.h
//
// Well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing past
// U+10FFFF). Text that reaches a proto3 `string` field, a JSON document or
// the store must be well-formed: protobuf refuses to parse a message whose
// string field is not (the gRPC server answers INTERNAL), nlohmann::json
// throws when it serialises it. Bytes from a trainer's output or a file are
// made valid where they enter (ToValidUtf8), never refused.
#ifndef SMOE_COMMON_UTF8_H_
#define SMOE_COMMON_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace smoe {

// The offset of the first byte that does not start a well-formed sequence
// (or starts one that is cut or ill-formed), or -1 when `s` is well-formed.
int64_t InvalidUtf8Offset(absl::string_view s);
inline bool IsValidUtf8(absl::string_view s) {
  return InvalidUtf8Offset(s) < 0;
}

// `s` with every byte that is not part of a well-formed sequence replaced by
// U+FFFD (the replacement character, 3 bytes); well-formed text is returned
// unchanged.
std::string ToValidUtf8(absl::string_view s);

// The largest n <= max_bytes such that s[0, n) does not end inside a
// well-formed multibyte sequence (cut text there, not mid-character).
size_t Utf8CutBefore(absl::string_view s, size_t max_bytes);

// The smallest offset >= from (and at most from + 3) that is not a
// continuation byte: where text that was cut at `from` should start.
size_t Utf8CharStartAtOrAfter(absl::string_view s, size_t from);

}  // namespace smoe

#endif  // SMOE_COMMON_UTF8_H_
