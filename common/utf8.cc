// Copyright 2026 SMoE Lab authors.
#include "common/utf8.h"

namespace smoe {
namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// The length of the well-formed sequence at s[i], or 0 when there is none.
size_t SequenceLength(absl::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  size_t n = 0;
  uint32_t cp = 0;
  if ((c & 0xE0) == 0xC0) {
    n = 1;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 2;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 3;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n >= s.size()) return 0;
  for (size_t k = 1; k <= n; ++k) {
    const unsigned char d = static_cast<unsigned char>(s[i + k]);
    if (!IsContinuation(d)) return 0;
    cp = (cp << 6) | (d & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are ill-formed.
  if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) ||
      (n == 3 && cp < 0x10000) || cp > 0x10FFFF ||
      (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;
  }
  return n + 1;
}

}  // namespace

int64_t InvalidUtf8Offset(absl::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const size_t n = SequenceLength(s, i);
    if (n == 0) return static_cast<int64_t>(i);
    i += n;
  }
  return -1;
}

std::string ToValidUtf8(absl::string_view s) {
  int64_t bad = InvalidUtf8Offset(s);
  if (bad < 0) return std::string(s);
  std::string out(s.substr(0, static_cast<size_t>(bad)));
  out.reserve(s.size() + 16);
  size_t i = static_cast<size_t>(bad);
  while (i < s.size()) {
    const size_t n = SequenceLength(s, i);
    if (n == 0) {
      out += kReplacement;
      ++i;
    } else {
      out.append(s.data() + i, n);
      i += n;
    }
  }
  return out;
}

size_t Utf8CutBefore(absl::string_view s, size_t max_bytes) {
  if (max_bytes >= s.size()) return s.size();
  const size_t n = max_bytes;
  auto cont = [&](size_t i) {
    return IsContinuation(static_cast<unsigned char>(s[i]));
  };
  if (!cont(n)) return n;  // s[n] starts a character (or is no UTF-8)
  // s[n] continues a sequence: cut before its lead byte when the sequence
  // is well-formed and reaches past n.
  size_t lead = n;
  for (int k = 0; k < 3 && lead > 0; ++k) {
    --lead;
    if (!cont(lead)) break;
  }
  if (cont(lead)) return n;
  const size_t len = SequenceLength(s, lead);
  return len != 0 && lead + len > n ? lead : n;
}

size_t Utf8CharStartAtOrAfter(absl::string_view s, size_t from) {
  size_t i = from;
  while (i < s.size() && i < from + 3 &&
         IsContinuation(static_cast<unsigned char>(s[i]))) {
    ++i;
  }
  return i;
}

}  // namespace smoe
