// Copyright 2026 SMoE Lab authors.
#include "coordinator/http/http_connections.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace smoe::coordinator {
namespace {

// Waits up to `wait` for `events` on `sock`; true when they are ready.
bool Poll(socket_t sock, short events, absl::Duration wait) {
  const absl::Time end = absl::Now() + wait;
  while (true) {
    const int64_t ms =
        std::max<int64_t>(0, absl::ToInt64Milliseconds(end - absl::Now()));
    pollfd p{sock, events, 0};
    const int rc =
        ::poll(&p, 1, static_cast<int>(std::min<int64_t>(ms, 1 << 30)));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) return false;
  }
}

std::string NumericHost(const sockaddr_storage& addr, socklen_t len,
                        int* port) {
  char host[NI_MAXHOST] = "";
  char serv[NI_MAXSERV] = "";
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, host,
                    sizeof(host), serv, sizeof(serv),
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "";
  }
  if (port != nullptr) *port = std::atoi(serv);
  return host;
}

// Marks `*since` with the time while the owner waits for its client's bytes
// (an eviction candidate, http_connections.h); null: not tracked.
class WaitingMark {
 public:
  explicit WaitingMark(std::atomic<int64_t>* since) : since_(since) {
    if (since_ != nullptr) since_->store(absl::ToUnixNanos(absl::Now()));
  }
  ~WaitingMark() {
    if (since_ != nullptr) since_->store(0);
  }
  WaitingMark(const WaitingMark&) = delete;
  WaitingMark& operator=(const WaitingMark&) = delete;

 private:
  std::atomic<int64_t>* since_;
};

// A socket stream whose reads share one deadline per request (StartRequest)
// on top of the per-read timeout, and which buffers what it reads (requests
// may be pipelined, and cpp-httplib reads header lines byte by byte).
class DeadlineSocketStream final : public httplib::Stream {
 public:
  // `waiting` (may be null): set while a read waits for the client.
  DeadlineSocketStream(socket_t sock, absl::Duration read_timeout,
                       absl::Duration write_timeout,
                       std::atomic<int64_t>* waiting = nullptr)
      : sock_(sock),
        read_timeout_(read_timeout),
        write_timeout_(write_timeout),
        waiting_(waiting) {}

  // Reads (without consuming) until the buffer holds a whole first line, the
  // buffer is full, the peer closes or the deadline passes; returns that
  // line's start. Only before the first read().
  std::string PeekLine() {
    while (std::memchr(buf_, '\n', len_) == nullptr && len_ < sizeof(buf_)) {
      const absl::Duration wait = ReadWait();
      if (wait <= absl::ZeroDuration()) break;
      if (WaitingMark mark(waiting_); !Poll(sock_, POLLIN, wait)) break;
      ssize_t n;
      do {
        n = ::recv(sock_, buf_ + len_, sizeof(buf_) - len_, 0);
      } while (n < 0 && errno == EINTR);
      if (n <= 0) break;
      len_ += static_cast<size_t>(n);
    }
    return std::string(buf_, len_);
  }

  void StartRequest(absl::Time deadline) {
    deadline_ = deadline;
    expired_ = false;
    failed_ = false;
    head_.clear();
    head_done_ = false;
    after_head_ = 0;
  }

  // After the library has handled a request: reads and drops what is left of
  // its body, so the next request on the connection starts at its own first
  // byte. cpp-httplib 0.11 reads a body only for POST/PUT/PATCH/DELETE that
  // reach a handler: a GET's Content-Length body, or the body of a request
  // refused before routing (401/403), stayed in the stream and was parsed as
  // the next request (an empty-body 400 per line). The request head is the
  // one this stream saw consumed; the body it declared (Content-Length) less
  // what the library read is discarded, within the request deadline. False
  // when the connection cannot be reused: an unreadable head, an unread
  // chunked body, a bad Content-Length, more than `max_discard` bytes left,
  // or a read that fails.
  bool DiscardUnreadBody(uint64_t max_discard) {
    if (!head_done_) return false;
    std::optional<uint64_t> length;
    bool chunked = false;
    std::vector<absl::string_view> lines = absl::StrSplit(head_, "\r\n");
    for (size_t i = 1; i < lines.size(); ++i) {
      const size_t colon = lines[i].find(':');
      if (colon == absl::string_view::npos) continue;
      const std::string name = absl::AsciiStrToLower(
          absl::StripAsciiWhitespace(lines[i].substr(0, colon)));
      const absl::string_view value =
          absl::StripAsciiWhitespace(lines[i].substr(colon + 1));
      if (name == "transfer-encoding") {
        chunked = chunked || !absl::EqualsIgnoreCase(value, "identity");
      } else if (name == "content-length") {
        uint64_t n = 0;
        if (!absl::SimpleAtoi(value, &n) || (length && *length != n)) {
          return false;
        }
        length = n;
      }
    }
    // A chunked body the library read ends at its last chunk; one it did
    // not read cannot be skipped without parsing it: close instead.
    if (chunked) return after_head_ > 0;
    if (!length.has_value() || after_head_ >= *length) return true;
    uint64_t left = *length - after_head_;
    if (left > max_discard) return false;
    char sink[4096];
    while (left > 0) {
      const ssize_t n = read(
          sink, static_cast<size_t>(std::min<uint64_t>(left, sizeof(sink))));
      if (n <= 0) return false;
      left -= static_cast<uint64_t>(n);
    }
    return true;
  }
  bool expired() const { return expired_; }
  // A read timed out (per read or at the deadline) during this request.
  bool failed() const { return failed_; }
  bool buffered() const { return pos_ < len_; }

  bool is_readable() const override {
    return buffered() || Poll(sock_, POLLIN, ReadWait());
  }
  // False once the peer has closed: an SSE stream (which asks this between
  // events) ends as soon as its client goes, not at its next write.
  bool is_writable() const override {
    return PeerOpen() && Poll(sock_, POLLOUT, write_timeout_);
  }

  ssize_t read(char* ptr, size_t size) override {
    if (size == 0) return 0;
    if (!buffered()) {
      const absl::Duration wait = ReadWait();
      const bool deadline_bound = wait < read_timeout_;
      bool ready = false;
      if (wait > absl::ZeroDuration()) {
        WaitingMark mark(waiting_);
        ready = Poll(sock_, POLLIN, wait);
      }
      if (!ready) {
        // Timed out: at the request deadline when it bounded the wait.
        // Either way the connection is not reused (cpp-httplib answers 400
        // and would wait for the next request on it).
        failed_ = true;
        expired_ = deadline_bound;
        return -1;
      }
      ssize_t n;
      do {
        n = ::recv(sock_, buf_, sizeof(buf_), 0);
      } while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      pos_ = 0;
      len_ = static_cast<size_t>(n);
    }
    const size_t n = std::min(size, len_ - pos_);
    std::memcpy(ptr, buf_ + pos_, n);
    pos_ += n;
    Account(ptr, n);
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    ssize_t n;
    do {
      n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr;
    socklen_t len = sizeof(addr);
    if (::getpeername(sock_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      ip = NumericHost(addr, len, &port);
    }
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr;
    socklen_t len = sizeof(addr);
    if (::getsockname(sock_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      ip = NumericHost(addr, len, &port);
    }
  }
  socket_t socket() const override { return sock_; }

 private:
  bool PeerOpen() const {
    pollfd p{sock_, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return true;
    if ((p.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) return false;
    char c;
    const ssize_t n = ::recv(sock_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
                               errno == EINTR));
  }

  // Splits what the library consumed into the request head (up to and
  // including the blank line; capped, the library refuses longer heads) and
  // the body bytes after it.
  void Account(const char* p, size_t n) {
    if (head_done_) {
      after_head_ += n;
      return;
    }
    for (size_t i = 0; i < n; ++i) {
      if (head_done_) {
        after_head_ += n - i;
        return;
      }
      if (head_.size() < kMaxHead) head_.push_back(p[i]);
      if (absl::EndsWith(head_, "\r\n\r\n") ||
          (head_.size() >= 2 && absl::EndsWith(head_, "\n\n"))) {
        head_done_ = true;
      }
    }
  }

  absl::Duration ReadWait() const {
    return std::min(read_timeout_, deadline_ - absl::Now());
  }

  const socket_t sock_;
  const absl::Duration read_timeout_;
  const absl::Duration write_timeout_;
  std::atomic<int64_t>* const waiting_;
  absl::Time deadline_ = absl::InfiniteFuture();
  bool expired_ = false;
  bool failed_ = false;
  char buf_[4096];
  size_t pos_ = 0;
  size_t len_ = 0;
  static constexpr size_t kMaxHead = 64 * 1024;
  std::string head_;
  bool head_done_ = false;
  uint64_t after_head_ = 0;
};

// The most body bytes a kept-alive connection drops for the next request
// (more, and the connection is closed instead).
constexpr uint64_t kMaxDiscardedBody = 1 << 20;

}  // namespace

int64_t BoundedHttpServer::refused_per_client() const {
  absl::MutexLock lock(&mu_);
  return refused_;
}

int64_t BoundedHttpServer::deadline_closed() const {
  absl::MutexLock lock(&mu_);
  return deadline_closed_;
}

int64_t BoundedHttpServer::evicted() const {
  absl::MutexLock lock(&mu_);
  return evicted_;
}

int64_t BoundedHttpServer::refused_total() const {
  absl::MutexLock lock(&mu_);
  return refused_total_;
}

int BoundedHttpServer::total_connections() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(conns_.size());
}

bool BoundedHttpServer::EvictForLocked(int newcomer_open) {
  Conn* victim = nullptr;
  int victim_open = newcomer_open + 1;  // must have at least 2 more
  int64_t victim_since = 0;
  for (const auto& [sock, conn] : conns_) {
    const int64_t since = conn->waiting_since.load();
    if (conn->evicted || since == 0) continue;
    const int open = open_[conn->client];
    if (open > victim_open ||
        (open == victim_open && victim != nullptr && since < victim_since)) {
      victim = conn.get();
      victim_open = open;
      victim_since = since;
    }
  }
  if (victim == nullptr) return false;
  victim->evicted = true;
  ++evicted_;
  // Its thread wakes from poll() (the read returns 0) and closes it; the
  // descriptor is still open, it leaves conns_ before it is closed.
  ::shutdown(victim->sock, SHUT_RDWR);
  return true;
}

int BoundedHttpServer::open_connections(const std::string& address) const {
  absl::MutexLock lock(&mu_);
  auto it = open_.find(address);
  return it == open_.end() ? 0 : it->second;
}

bool BoundedHttpServer::RaiseListenBacklog(int backlog) {
  const socket_t sock = svr_sock_;
  return sock != INVALID_SOCKET && ::listen(sock, backlog) == 0;
}

bool BoundedHttpServer::WaitForRequest(socket_t sock, Conn* conn) const {
  WaitingMark mark(&conn->waiting_since);
  const absl::Time end = absl::Now() + absl::Seconds(keep_alive_timeout_sec_);
  while (svr_sock_ != INVALID_SOCKET) {
    const absl::Duration left = end - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    // Short steps, so a stopping server does not wait for idle clients.
    if (Poll(sock, POLLIN, std::min(left, absl::Milliseconds(100)))) {
      return true;
    }
  }
  return false;
}

bool BoundedHttpServer::process_and_close_socket(socket_t sock) {
  std::string client;
  {
    sockaddr_storage addr;
    socklen_t len = sizeof(addr);
    if (::getpeername(sock, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      client = NumericHost(addr, len, nullptr);
    }
  }
  bool admitted = false;
  bool over_total = false;
  std::string budget_refusal;  // the shared budget's message
  auto conn = std::make_shared<Conn>();
  conn->client = client;
  conn->sock = sock;
  {
    absl::MutexLock lock(&mu_);
    int& open = open_[client];
    absl::Status budget;
    if (open >= limits_.max_per_client) {
      ++refused_;
    } else if (limits_.max_total > 0 &&
               static_cast<int>(conns_.size()) >= limits_.max_total &&
               !EvictForLocked(open)) {
      ++refused_total_;
      over_total = true;
    } else if (limits_.budget != nullptr &&
               !(budget = limits_.budget->Acquire(client, "http")).ok()) {
      // The address's gRPC calls hold the rest of its budget.
      ++refused_;
      budget_refusal = std::string(budget.message());
    } else {
      ++open;
      conns_[sock] = conn;
      admitted = true;
    }
    if (open == 0) open_.erase(client);
  }
  bool ret = false;
  const absl::Duration read_timeout =
      absl::Seconds(read_timeout_sec_) + absl::Microseconds(read_timeout_usec_);
  const absl::Duration write_timeout = absl::Seconds(write_timeout_sec_) +
                                       absl::Microseconds(write_timeout_usec_);
  if (!admitted) {
    // Health probes are never starved: a connection over the per-client cap
    // may still ask for /healthz (one request, its first line within 1 s);
    // over the total cap only if it is there already (a refusal there never
    // waits: the threads are for admitted connections). Anything else is
    // told why and closed.
    DeadlineSocketStream strm(sock, read_timeout, write_timeout);
    strm.StartRequest(absl::Now() +
                      (over_total ? absl::ZeroDuration() : absl::Seconds(1)));
    std::string head;
    if (over_total) {
      char peek[32];
      const ssize_t n =
          ::recv(sock, peek, sizeof(peek), MSG_PEEK | MSG_DONTWAIT);
      if (n > 0) head.assign(peek, static_cast<size_t>(n));
    } else {
      head = strm.PeekLine();
    }
    if (absl::StartsWith(head, "GET /healthz ") ||
        absl::StartsWith(head, "HEAD /healthz ")) {
      strm.StartRequest(absl::Now() + limits_.request_deadline);
      bool connection_closed = false;
      ret = process_request(strm, /*close_connection=*/true, connection_closed,
                            nullptr);
    } else {
      const std::string body =
          over_total ? absl::StrCat("the server is at its connection limit (",
                                    limits_.max_total, "); retry later\n")
          : !budget_refusal.empty()
              ? absl::StrCat(budget_refusal, "\n")
              : absl::StrCat("too many connections from this client (at most ",
                             limits_.max_per_client, "); retry later\n");
      const std::string reply = absl::StrCat(
          "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; "
          "charset=utf-8\r\nRetry-After: 5\r\nConnection: close\r\n"
          "Content-Length: ",
          body.size(), "\r\n\r\n", body);
      // Best effort, never blocking.
      (void)::send(sock, reply.data(), reply.size(),
                   MSG_NOSIGNAL | MSG_DONTWAIT);
    }
  } else {
    DeadlineSocketStream strm(sock, read_timeout, write_timeout,
                              &conn->waiting_since);
    size_t count = keep_alive_max_count_;
    while (count > 0 && (strm.buffered() || WaitForRequest(sock, conn.get()))) {
      strm.StartRequest(absl::Now() + limits_.request_deadline);
      bool connection_closed = false;
      ret = process_request(strm, count == 1, connection_closed, nullptr);
      if (strm.expired()) {
        absl::MutexLock lock(&mu_);
        ++deadline_closed_;
        break;
      }
      if (strm.failed()) break;
      if (!ret || connection_closed) break;
      if (!strm.DiscardUnreadBody(kMaxDiscardedBody)) break;
      --count;
    }
    absl::MutexLock lock(&mu_);
    conns_.erase(sock);
    if (--open_[client] <= 0) open_.erase(client);
    if (limits_.budget != nullptr) limits_.budget->Release(client, "http");
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ret;
}

}  // namespace smoe::coordinator
