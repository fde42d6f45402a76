// Copyright 2026 SMoE Lab authors.
#include "worker/eval/skillmix/openai_grader.h"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/logging.h"
#include "nlohmann/json.hpp"
#include "worker/eval/skillmix/data.h"
#include "worker/eval/skillmix/python_random.h"

namespace smoe::skillmix {

using Json = nlohmann::json;

struct OpenAiChatModel::Request {
  Json body;              // the request body (no credentials)
  std::string cache_key;  // hex SHA-512 of the cache identity
  int n = 1;              // choices expected
  const std::atomic<bool>* cancel = nullptr;  // SamplingParams::cancel
};

namespace {

std::string HexDigest(absl::string_view data) {
  static const char* kHex = "0123456789abcdef";
  const std::array<uint8_t, 64> d = Sha512(data);
  std::string out;
  for (uint8_t b : d) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

std::string Dump(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

size_t WriteBody(char* ptr, size_t size, size_t nmemb, void* userdata) {
  static_cast<std::string*>(userdata)->append(ptr, size * nmemb);
  return size * nmemb;
}

size_t WriteHeader(char* ptr, size_t size, size_t nitems, void* userdata) {
  const absl::string_view line(ptr, size * nitems);
  const size_t colon = line.find(':');
  if (colon != absl::string_view::npos) {
    const std::string name = absl::AsciiStrToLower(
        absl::StripAsciiWhitespace(line.substr(0, colon)));
    if (name == "retry-after") {
      *static_cast<std::string*>(userdata) =
          std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
    }
  }
  return size * nitems;
}

bool Cancelled(const std::atomic<bool>* cancel) {
  return cancel != nullptr && cancel->load();
}

// libcurl progress callback: a non-zero return aborts the transfer.
int AbortIfCancelled(void* clientp, curl_off_t, curl_off_t, curl_off_t,
                     curl_off_t) {
  return Cancelled(static_cast<const std::atomic<bool>*>(clientp)) ? 1 : 0;
}

// Sleeps `d` in short slices; false if cancelled meanwhile.
bool SleepUnlessCancelled(absl::Duration d, const std::atomic<bool>* cancel) {
  const absl::Time end = absl::Now() + d;
  while (absl::Now() < end) {
    if (Cancelled(cancel)) return false;
    absl::SleepFor(std::min(end - absl::Now(), absl::Milliseconds(50)));
  }
  return !Cancelled(cancel);
}

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// Full jitter: uniform in [0, min(max, initial * 2^attempt)].
absl::Duration Backoff(const OpenAiOptions& o, int attempt) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const double cap = std::min(absl::ToDoubleSeconds(o.max_backoff),
                              absl::ToDoubleSeconds(o.initial_backoff) *
                                  std::ldexp(1.0, std::min(attempt, 30)));
  std::uniform_real_distribution<double> u(0.0, cap);
  return absl::Seconds(u(rng));
}

absl::Status ReadCache(const std::string& path, int n,
                       std::vector<std::string>* out) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  Json j = Json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.contains("choices") || !j["choices"].is_array() ||
      static_cast<int>(j["choices"].size()) != n) {
    return absl::DataLossError("bad cache entry");
  }
  out->clear();
  for (const Json& c : j["choices"]) {
    if (!c.is_string()) return absl::DataLossError("bad cache entry");
    out->push_back(c.get<std::string>());
  }
  return absl::OkStatus();
}

absl::Status WriteCacheAtomic(const std::string& path,
                              const std::vector<std::string>& choices) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(),
                                      ec);
  // Unique per process and thread: trials may share one cache directory.
  const std::string tmp =
      absl::StrCat(path, ".tmp.", ::getpid(), ".",
                   std::hash<std::thread::id>()(std::this_thread::get_id()));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << Dump(Json{{"choices", choices}});
    f.flush();
    if (!f)
      return absl::InternalError(absl::StrCat("cannot write '", tmp, "'"));
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot rename to '", path, "': ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<OpenAiChatModel>> OpenAiChatModel::Create(
    const OpenAiOptions& options) {
  if (options.base_url.empty()) {
    return absl::InvalidArgumentError("grader_base_url: empty");
  }
  if (options.model.empty()) {
    return absl::InvalidArgumentError("grader_model: empty");
  }
  if (options.max_retries < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_retries: ", options.max_retries, " must be >= 0"));
  }
  if (options.max_concurrency < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_concurrency: ", options.max_concurrency, " must be >= 1"));
  }
  std::string key;
  if (!options.api_key_env.empty()) {
    const char* v = std::getenv(options.api_key_env.c_str());
    if (v == nullptr || *v == '\0') {
      return absl::FailedPreconditionError(
          absl::StrCat("grader_api_key_env: environment variable '",
                       options.api_key_env, "' is not set or empty"));
    }
    key = v;
  }
  if (!options.cache_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options.cache_dir, ec);
    if (ec) {
      return absl::InternalError(absl::StrCat(
          "cannot create cache dir '", options.cache_dir, "': ", ec.message()));
    }
  }
  GlobalInit();
  return std::unique_ptr<OpenAiChatModel>(
      new OpenAiChatModel(options, std::move(key)));
}

OpenAiChatModel::OpenAiChatModel(OpenAiOptions options, std::string api_key)
    : options_(std::move(options)), api_key_(std::move(api_key)) {}

std::string OpenAiChatModel::Redact(std::string text) const {
  if (!api_key_.empty()) absl::StrReplaceAll({{api_key_, "[REDACTED]"}}, &text);
  return text;
}

void OpenAiChatModel::WaitForRateLimit() {
  if (options_.max_requests_per_second <= 0) return;
  absl::Time start;
  {
    absl::MutexLock lock(&rate_mu_);
    start = std::max(absl::Now(), next_start_);
    next_start_ = start + absl::Seconds(1.0 / options_.max_requests_per_second);
  }
  const absl::Duration wait = start - absl::Now();
  if (wait > absl::ZeroDuration()) absl::SleepFor(wait);
}

absl::StatusOr<std::vector<std::string>> OpenAiChatModel::SendOnce(
    const Request& request, long* http_code, absl::Duration* retry_after,
    bool* retryable) {
  *http_code = 0;
  *retry_after = absl::ZeroDuration();
  *retryable = false;
  std::string url = options_.base_url;
  while (!url.empty() && url.back() == '/') url.pop_back();
  url += "/chat/completions";
  const std::string body = Dump(request.body);

  CURL* curl = curl_easy_init();
  if (curl == nullptr) return absl::InternalError("curl_easy_init failed");
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Content-Type: application/json");
  std::string auth;
  if (!api_key_.empty()) {
    auth = absl::StrCat("Authorization: Bearer ", api_key_);
    headers = curl_slist_append(headers, auth.c_str());
  }
  std::string response, retry_after_header;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                   static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &WriteBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &response);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &WriteHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &retry_after_header);
  curl_easy_setopt(
      curl, CURLOPT_CONNECTTIMEOUT_MS,
      static_cast<long>(absl::ToInt64Milliseconds(options_.connect_timeout)));
  curl_easy_setopt(
      curl, CURLOPT_TIMEOUT_MS,
      static_cast<long>(absl::ToInt64Milliseconds(options_.request_timeout)));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, &AbortIfCancelled);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA,
                   const_cast<std::atomic<bool>*>(request.cancel));
  const CURLcode rc = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, http_code);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  // Scrub the header copy of the key from memory we still own.
  std::fill(auth.begin(), auth.end(), '\0');

  if (rc == CURLE_ABORTED_BY_CALLBACK) {
    return absl::CancelledError("grader request cancelled");
  }
  if (rc != CURLE_OK) {
    *retryable = true;
    const std::string msg =
        absl::StrCat("POST ", url, ": ", curl_easy_strerror(rc));
    return rc == CURLE_OPERATION_TIMEDOUT ? absl::DeadlineExceededError(msg)
                                          : absl::UnavailableError(msg);
  }
  double seconds = 0;
  if (!retry_after_header.empty() &&
      absl::SimpleAtod(retry_after_header, &seconds) && seconds > 0) {
    *retry_after = absl::Seconds(std::min(seconds, 600.0));
  }
  if (*http_code != 200) {
    const std::string msg = Redact(absl::StrCat(
        "POST ", url, ": HTTP ", *http_code, ": ", response.substr(0, 300)));
    if (*http_code == 429 || *http_code >= 500) {
      *retryable = true;
      return absl::UnavailableError(msg);
    }
    if (*http_code == 401 || *http_code == 403) {
      return absl::PermissionDeniedError(msg);
    }
    return absl::InvalidArgumentError(msg);
  }
  Json j = Json::parse(response, nullptr, false);
  if (j.is_discarded() || !j.contains("choices") || !j["choices"].is_array()) {
    return absl::InternalError(Redact(absl::StrCat(
        "POST ", url,
        ": response has no 'choices': ", response.substr(0, 300))));
  }
  std::map<int, std::string> by_index;
  int next = 0;
  for (const Json& c : j["choices"]) {
    const int index = c.contains("index") && c["index"].is_number_integer()
                          ? c["index"].get<int>()
                          : next;
    ++next;
    if (!c.contains("message") || !c["message"].contains("content") ||
        !c["message"]["content"].is_string()) {
      return absl::InternalError(
          absl::StrCat("POST ", url, ": choice ", index, " has no content"));
    }
    by_index[index] = c["message"]["content"].get<std::string>();
  }
  if (static_cast<int>(by_index.size()) != request.n) {
    return absl::InternalError(absl::StrCat("POST ", url, ": ", by_index.size(),
                                            " choices for n = ", request.n));
  }
  std::vector<std::string> out;
  for (auto& [i, text] : by_index) out.push_back(std::move(text));
  return out;
}

absl::StatusOr<std::vector<std::string>> OpenAiChatModel::Send(
    const Request& request) {
  std::string cache_path;
  if (!options_.cache_dir.empty()) {
    cache_path =
        absl::StrCat(options_.cache_dir, "/", request.cache_key.substr(0, 2),
                     "/", request.cache_key, ".json");
    std::vector<std::string> cached;
    if (ReadCache(cache_path, request.n, &cached).ok()) {
      ++cache_hits_;
      return cached;
    }
  }
  absl::Status last;
  for (int attempt = 0; attempt <= options_.max_retries; ++attempt) {
    if (attempt > 0) ++retries_;
    if (Cancelled(request.cancel)) {
      return absl::CancelledError("grader request cancelled");
    }
    WaitForRateLimit();
    ++requests_sent_;
    long code = 0;
    absl::Duration retry_after;
    bool retryable = false;
    auto r = SendOnce(request, &code, &retry_after, &retryable);
    if (r.ok()) {
      if (!cache_path.empty()) {
        const absl::Status w = WriteCacheAtomic(cache_path, *r);
        if (!w.ok()) SMOE_LOG(WARNING) << "grader cache: " << w.message();
      }
      return r;
    }
    last = r.status();
    if (!retryable || attempt == options_.max_retries) break;
    const absl::Duration wait =
        std::max(retry_after, Backoff(options_, attempt));
    SMOE_LOG(WARNING) << "grader request failed (" << last.message()
                      << "); retry " << attempt + 1 << "/"
                      << options_.max_retries << " in " << wait;
    if (!SleepUnlessCancelled(wait, request.cancel)) {
      return absl::CancelledError("grader request cancelled");
    }
  }
  return last;
}

absl::StatusOr<std::vector<std::string>> OpenAiChatModel::Complete(
    const std::vector<Conversation>& conversations,
    const SamplingParams& params) {
  // Group identical conversations (first-appearance order).
  std::vector<std::vector<size_t>> groups;
  std::vector<Json> group_messages;
  std::map<std::string, size_t> group_of;
  for (size_t i = 0; i < conversations.size(); ++i) {
    const Conversation& conv = conversations[i];
    if (conv.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("conversation ", i, ": empty"));
    }
    Json messages = Json::array();
    for (const ChatMessage& m : conv) {
      if (m.role != "system" && m.role != "user" && m.role != "assistant") {
        return absl::InvalidArgumentError(
            absl::StrCat("conversation ", i, ": role '", m.role,
                         "' is not one of "
                         "{system, user, assistant}"));
      }
      messages.push_back({{"role", m.role}, {"content", m.content}});
    }
    const std::string key = Dump(messages);
    auto it = group_of.find(key);
    if (options_.use_n && it != group_of.end()) {
      groups[it->second].push_back(i);
    } else {
      group_of[key] = groups.size();
      groups.push_back({i});
      group_messages.push_back(std::move(messages));
    }
  }
  // One request per group (use_n) or per conversation; `copy` numbers the
  // repeated conversations so they are cached separately.
  std::vector<Request> requests;
  std::vector<std::vector<size_t>> targets;
  std::map<std::string, int> copies;
  for (size_t g = 0; g < groups.size(); ++g) {
    Request req;
    req.n = static_cast<int>(groups[g].size());
    req.cancel = params.cancel;
    const std::string conv_key = Dump(group_messages[g]);
    const int copy = copies[conv_key]++;
    req.body = {{"model", options_.model},
                {"messages", group_messages[g]},
                {"max_tokens", params.max_new_tokens},
                {"temperature", params.temperature},
                {"top_p", params.top_p}};
    if (req.n > 1) req.body["n"] = req.n;
    uint64_t seed = params.seed;
    if (copy > 0) seed = seed + static_cast<uint64_t>(copy);
    if (options_.send_seed) req.body["seed"] = seed;
    const Json identity = {{"base_url", options_.base_url},
                           {"model", options_.model},
                           {"messages", group_messages[g]},
                           {"max_tokens", params.max_new_tokens},
                           {"temperature", params.temperature},
                           {"top_p", params.top_p},
                           {"top_k", params.top_k},
                           {"seed", params.seed},
                           {"n", req.n},
                           {"copy", copy}};
    req.cache_key = HexDigest(Dump(identity));
    requests.push_back(std::move(req));
    targets.push_back(groups[g]);
  }
  std::vector<absl::StatusOr<std::vector<std::string>>> results(
      requests.size(), absl::UnknownError("not run"));
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t r = next++; r < requests.size(); r = next++) {
      results[r] = Send(requests[r]);
    }
  };
  const int threads = std::min<int>(options_.max_concurrency,
                                    static_cast<int>(requests.size()));
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();

  std::vector<std::string> out(conversations.size());
  for (size_t r = 0; r < requests.size(); ++r) {
    if (!results[r].ok()) return results[r].status();
    for (size_t c = 0; c < targets[r].size(); ++c) {
      out[targets[r][c]] = std::move((*results[r])[c]);
    }
  }
  return out;
}

}  // namespace smoe::skillmix
