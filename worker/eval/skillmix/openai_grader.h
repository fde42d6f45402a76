// Copyright 2026 SMoE Lab authors.
//
// File: worker/eval/skillmix/openai_grader.h
//
// A ChatModel over an OpenAI-compatible chat-completions endpoint
// (POST {base_url}/chat/completions; OpenAI, vLLM, llama.cpp server, ...),
// used as the Skill-Mix grader (docs/skillmix.md 1.4: GPT-4, system
// message "You are a helpful assistant.", n = 3 gradings per request).
//
//   * Identical conversations in one Complete() batch are sent as one request
//     with n = their count (the reference's n=3), unless use_n is false.
//   * Retries with exponential backoff and full jitter on HTTP 429, 5xx,
//     connect failures and timeouts (honouring Retry-After); other 4xx fail at
//     once. A client-side rate limit spaces request starts. Connect and total
//     timeouts per request.
//   * Responses are cached on disk, one file per request, named by a SHA-512
//     of (base_url, model, messages, sampling params, n, copy) and written
//     atomically (tmp + rename), so a re-run costs no requests.
//   * The API key is read from the environment variable named in the options
//     when the model is created; it is sent only in the Authorization header
//     and is never logged, cached or put into an error message (server
//     replies quoted in errors have it replaced by "[REDACTED]").
//
// Thread-safety: thread-compatible (Complete() itself runs up to
// max_concurrency requests in parallel threads).
#ifndef SMOE_WORKER_EVAL_SKILLMIX_OPENAI_GRADER_H_
#define SMOE_WORKER_EVAL_SKILLMIX_OPENAI_GRADER_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "worker/eval/skillmix/chat_model.h"

namespace smoe::skillmix {

struct OpenAiOptions {
  // Endpoint prefix; "/chat/completions" is appended (a trailing '/' is ok).
  std::string base_url = "https://api.openai.com/v1";
  std::string model = "gpt-4";
  // Name of the environment variable holding the API key; "" sends no
  // Authorization header (local servers).
  std::string api_key_env = "OPENAI_API_KEY";
  // Response cache directory ("" = no cache). Created if missing.
  std::string cache_dir;
  // Retries after the first attempt, for 429/5xx/transport errors.
  int max_retries = 6;
  absl::Duration initial_backoff = absl::Seconds(1);
  absl::Duration max_backoff = absl::Seconds(60);
  absl::Duration connect_timeout = absl::Seconds(10);
  absl::Duration request_timeout = absl::Seconds(180);
  // Client-side limit on request starts per second (<= 0: unlimited).
  double max_requests_per_second = 2.0;
  // Parallel requests inside one Complete() call.
  int max_concurrency = 4;
  // Send identical conversations as one request with n > 1.
  bool use_n = true;
  // Send SamplingParams::seed as the request's "seed" (best effort on
  // OpenAI; some compatible servers reject unknown fields).
  bool send_seed = true;
};

class OpenAiChatModel : public ChatModel {
 public:
  // Reads the API key from the environment now. Errors: InvalidArgument for
  // an empty base_url/model or non-positive limits; FailedPrecondition when
  // api_key_env names an unset or empty variable (the message names the
  // variable, never a value); Internal if cache_dir cannot be created.
  static absl::StatusOr<std::unique_ptr<OpenAiChatModel>> Create(
      const OpenAiOptions& options);

  // Sends the conversations (grouped, cached, retried as described above).
  // Errors: InvalidArgument (empty conversation, bad role), PermissionDenied
  // (401/403), InvalidArgument (other 4xx), Unavailable or DeadlineExceeded
  // when retries are exhausted, Internal for a malformed response.
  absl::StatusOr<std::vector<std::string>> Complete(
      const std::vector<Conversation>& conversations,
      const SamplingParams& params) override;

  // Counters since creation (for tests and progress output).
  int requests_sent() const { return requests_sent_.load(); }
  int cache_hits() const { return cache_hits_.load(); }
  int retries() const { return retries_.load(); }

 private:
  OpenAiChatModel(OpenAiOptions options, std::string api_key);

  struct Request;
  absl::StatusOr<std::vector<std::string>> Send(const Request& request);
  absl::StatusOr<std::vector<std::string>> SendOnce(const Request& request,
                                                    long* http_code,
                                                    absl::Duration* retry_after,
                                                    bool* retryable);
  void WaitForRateLimit();
  std::string Redact(std::string text) const;

  const OpenAiOptions options_;
  const std::string api_key_;  // never logged or written
  absl::Mutex rate_mu_;
  absl::Time next_start_ ABSL_GUARDED_BY(rate_mu_) = absl::InfinitePast();
  std::atomic<int> requests_sent_{0};
  std::atomic<int> cache_hits_{0};
  std::atomic<int> retries_{0};
};

}  // namespace smoe::skillmix

#endif  // SMOE_WORKER_EVAL_SKILLMIX_OPENAI_GRADER_H_
