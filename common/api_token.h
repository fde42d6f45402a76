// Copyright 2026 SMoE Lab authors.
//
// File: common/api_token.h
//
// The API token that guards the coordinator's gRPC and HTTP APIs.
//
// The coordinator creates it on first start (32 random bytes from the kernel,
// hex-encoded with a "smoe_" prefix) in a file of mode 0600 and prints it once.
// Clients (CLI, workers) read it from $SMOE_TOKEN, else from a token file.
// The token never goes to logs or the database.
#ifndef SMOE_COMMON_API_TOKEN_H_
#define SMOE_COMMON_API_TOKEN_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace smoe {

// Returns a new random token ("smoe_" + 64 hex digits).
absl::StatusOr<std::string> GenerateApiToken();

// The weakest token a coordinator accepts: at least this many characters...
inline constexpr size_t kMinTokenLength = 32;
// ...of which at least this many distinct ones (a generated token has 16+).
inline constexpr size_t kMinTokenDistinctChars = 10;

// OK when `token` is at least kMinTokenLength characters with at least
// kMinTokenDistinctChars distinct ones; InvalidArgument naming `source` (the
// file) and the token's length (never the token) otherwise.
absl::Status CheckTokenStrength(absl::string_view token,
                                absl::string_view source);

// Loads the token stored at `path`, or creates one there (mode 0600, created
// atomically) when the file does not exist. Sets `*created` to whether it was
// created. Refuses (PermissionDenied) a token file readable by group/others,
// and (InvalidArgument, CheckTokenStrength) a weak token.
absl::StatusOr<std::string> LoadOrCreateTokenFile(const std::string& path,
                                                  bool* created);

// The token file a client uses when none is given (`smoe` commands and
// `smoe worker`): the first of `<dir>/smoe-data/token` and, where `<dir>` is
// itself a data directory (it holds smoe.db), `<dir>/token`, for `<dir>` =
// `start_dir` and each of its parents up to /; else `$HOME/.smoe/token`
// (`home`; "." when null). So a command run anywhere below the directory that
// `smoe up` or `smoe coordinator --data-dir` used finds its token.
std::string DefaultTokenFile(const std::string& start_dir, const char* home);
// The same from the current directory and $HOME.
std::string DefaultTokenFile();

// A client's token and where it came from ("$SMOE_TOKEN" or
// "token file '<path>'"), so that a refusal can name its source (never the
// token itself).
struct ClientToken {
  std::string token;
  std::string source;
};

// Returns the client token, first found of: `explicit_token_file` (a
// --token-file given on the command line wins over the environment), then
// $SMOE_TOKEN when set and non-empty, then DefaultTokenFile(). File contents
// are whitespace trimmed. NotFound names every source looked at; an explicit
// file that is missing or empty is an error even when $SMOE_TOKEN is set.
absl::StatusOr<ClientToken> ResolveClientToken(
    const std::string& explicit_token_file);

// Compares two tokens in time independent of where they differ.
bool TokenEquals(absl::string_view a, absl::string_view b);

// The environment variable a sweep may name as a grader's API key
// (`grader_api_key_env`). A sweep file chooses both that name and the URL the
// key is sent to, so the name is confined to API keys: upper-case letters,
// digits and '_', ending in "_API_KEY" (OPENAI_API_KEY, TOGETHER_API_KEY,
// ...). Anything else on a worker (SMOE_TOKEN, cloud credentials such as
// AWS_SECRET_ACCESS_KEY, HOME) cannot be sent out by a sweep. InvalidArgument
// naming the value otherwise.
absl::Status CheckApiKeyEnvName(absl::string_view name);

}  // namespace smoe

#endif  // SMOE_COMMON_API_TOKEN_H_
