// Copyright 2026 SMoE Lab authors.
#include "worker/trainer/json_params.h"

#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace smoe::trainer {

using json = nlohmann::json;

absl::Status JsonParamError(absl::string_view key, const json& value,
                            absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat(key, "=", value.dump(), ": ", why));
}

absl::Status GetJsonInt(absl::string_view key, const json& v, int64_t lo,
                        int64_t hi, JsonIntRules rules, int64_t* out) {
  const auto out_of_range = [&] {
    return JsonParamError(
        key, v,
        rules.dotted_range ? absl::StrCat("must be in ", lo, "..", hi)
                           : absl::StrCat("must be in [", lo, ", ", hi, "]"));
  };
  int64_t x = 0;
  if (v.is_number_unsigned()) {  // NOTE: is_number_integer() is true too.
    if (v.get<uint64_t>() >
        static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return out_of_range();
    }
    x = static_cast<int64_t>(v.get<uint64_t>());
  } else if (v.is_number_integer()) {
    x = v.get<int64_t>();
  } else if (rules.integral_floats && v.is_number_float() &&
             std::isfinite(v.get<double>()) &&
             v.get<double>() == std::floor(v.get<double>()) &&
             std::fabs(v.get<double>()) < 9e15) {
    x = static_cast<int64_t>(v.get<double>());
  } else {
    return JsonParamError(key, v, "must be an integer");
  }
  if (x < lo || x > hi) return out_of_range();
  *out = x;
  return absl::OkStatus();
}

absl::Status GetJsonFiniteDouble(absl::string_view key, const json& v,
                                 double* out) {
  if (!v.is_number() || !std::isfinite(v.get<double>())) {
    return JsonParamError(key, v, "must be a finite number");
  }
  *out = v.get<double>();
  return absl::OkStatus();
}

absl::Status GetJsonDouble(absl::string_view key, const json& v, double lo,
                           double hi, double* out) {
  if (!v.is_number()) return JsonParamError(key, v, "must be a number");
  const double x = v.get<double>();
  if (!(x >= lo && x <= hi)) {
    return JsonParamError(key, v,
                          absl::StrCat("must be in [", lo, ", ", hi, "]"));
  }
  *out = x;
  return absl::OkStatus();
}

absl::Status GetJsonBool(absl::string_view key, const json& v, bool* out) {
  if (!v.is_boolean()) return JsonParamError(key, v, "must be true or false");
  *out = v.get<bool>();
  return absl::OkStatus();
}

absl::Status GetJsonString(absl::string_view key, const json& v,
                           std::string* out) {
  if (!v.is_string()) return JsonParamError(key, v, "must be a string");
  *out = v.get<std::string>();
  return absl::OkStatus();
}

absl::Status GetJsonOneOf(absl::string_view key, const json& v,
                          std::initializer_list<const char*> allowed,
                          std::string* out) {
  std::string s;
  if (absl::Status st = GetJsonString(key, v, &s); !st.ok()) return st;
  std::string list;
  for (const char* a : allowed) {
    if (s == a) {
      *out = std::move(s);
      return absl::OkStatus();
    }
    absl::StrAppend(&list, list.empty() ? "" : ", ", a);
  }
  return JsonParamError(key, v, absl::StrCat("must be one of {", list, "}"));
}

}  // namespace smoe::trainer
