// Copyright 2026 SMoE Lab authors.
//
// File: common/http_listener.h
//
// Runs a cpp-httplib server's accept loop on a thread of its own and stops it
// without the shutdown race of cpp-httplib 0.11 (Debian 12 ships 0.11.4):
// `httplib::Server::stop()` does nothing unless the accept loop has already
// set its `is_running_` flag, so a stop() that arrives between
// `bind_to_port()` and the listen thread reaching its loop is lost and the
// join then waits forever on a thread blocked in accept() (issue 20: the
// coordinator bench hung at exit in 6 of 12 runs; a fast Ctrl-C could hang
// `smoe coordinator`).
//
// HttpListener binds first, without SO_REUSEPORT (so Start() fails cleanly on
// a busy port instead of sharing it with another process), runs
// listen_after_bind() on a thread and returns once the accept loop runs
// (bounded wait). Stop() waits until the loop has observably started before
// issuing the single stop() that ends it, so no stop is ever lost.
// Header-only: its users link cpp-httplib anyway.
//
// Every cpp-httplib server in the tree (the dashboard and the tests' fake
// OpenAI-compatible graders) goes through this class.
//
// Thread safety: Start() and Stop() from one thread (or externally
// serialised); port() after Start().
#ifndef SMOE_COMMON_HTTP_LISTENER_H_
#define SMOE_COMMON_HTTP_LISTENER_H_

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace smoe {

class HttpListener {
 public:
  // `server` is not owned and must outlive this object (declare the listener
  // after the server so that it is destroyed first).
  explicit HttpListener(httplib::Server* server) : server_(server) {}
  ~HttpListener() { Stop(); }
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  // Binds host:port (port 0: any free port, see port()) and starts the accept
  // loop. Returns once the loop runs, or after `ready_timeout` (the socket is
  // bound and listening by then, so connections wait in the backlog; Stop()
  // is safe either way). Unavailable when the address cannot be bound;
  // Internal when the accept loop quits at once; FailedPrecondition when
  // called twice.
  absl::Status Start(const std::string& host, int port,
                     absl::Duration ready_timeout = absl::Seconds(10)) {
    if (started_) return absl::FailedPreconditionError("already started");
    // cpp-httplib's default socket options set SO_REUSEPORT (0.11.4: only
    // that), which lets a second process bind the same port and take a share
    // of its connections: a bench's dashboard on :8080 silently "shared" a
    // running coordinator's. SO_REUSEADDR alone still allows a quick restart
    // over TIME_WAIT connections, and a busy port fails here.
    server_->set_socket_options([](socket_t sock) {
      int yes = 1;
      ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR,
                   reinterpret_cast<const void*>(&yes), sizeof(yes));
    });
    if (port == 0) {
      port_ = server_->bind_to_any_port(host);
    } else {
      port_ = server_->bind_to_port(host, port) ? port : -1;
    }
    if (port_ <= 0) {
      port_ = -1;
      return absl::UnavailableError(absl::StrCat(
          "cannot bind ", host, ":", port, " (address in use or invalid)"));
    }
    started_ = true;
    thread_ = std::thread([this] {
      server_->listen_after_bind();
      std::lock_guard<std::mutex> lock(mu_);
      loop_ended_ = true;
      cv_.notify_all();
    });
    const absl::Time deadline = absl::Now() + ready_timeout;
    std::unique_lock<std::mutex> lock(mu_);
    while (!loop_ended_ && !server_->is_running() && absl::Now() < deadline) {
      cv_.wait_for(lock, std::chrono::milliseconds(1));
    }
    if (loop_ended_) {
      lock.unlock();
      thread_.join();
      return absl::InternalError(absl::StrCat("the HTTP accept loop on ", host,
                                              ":", port_,
                                              " ended as soon as it started"));
    }
    return absl::OkStatus();
  }

  // The bound port, or -1 before a successful Start().
  int port() const { return port_; }

  // Ends the accept loop and joins its thread; the server's task queue
  // finishes its requests first. Safe at any time after Start(), including
  // before the loop has started; idempotent.
  void Stop() {
    if (!thread_.joinable()) return;
    std::unique_lock<std::mutex> lock(mu_);
    // stop() is ignored until the loop runs (is_running()); once it runs, it
    // only ends through stop() (or an accept error), so a single stop() after
    // seeing is_running() is enough, and repeating it is never needed.
    while (!loop_ended_) {
      if (server_->is_running()) {
        server_->stop();
        break;
      }
      cv_.wait_for(lock, std::chrono::milliseconds(1));
    }
    lock.unlock();
    thread_.join();
  }

 private:
  httplib::Server* server_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool loop_ended_ = false;  // guarded by mu_
  bool started_ = false;
  int port_ = -1;
};

}  // namespace smoe

#endif  // SMOE_COMMON_HTTP_LISTENER_H_
