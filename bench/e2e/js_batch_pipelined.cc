// Pipelined batch publishers (--pipeline N): one raw socket, every message pre-encoded (the
// batch headers or the $FI reply written as bytes, no client library), up to N batches in
// flight. The libnats publisher builds each message's headers one call at a time and waits
// for every batch, so it, not the server, set the figure. A reader thread parses the replies.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench/e2e/js_batch_run.h"
#include "bench/e2e/raw_socket.h"

namespace peregrine::bench {
namespace {

// A raw NATS connection subscribed to one reply subject; the reader hands every MSG to
// `on_msg` (false stops it) and answers the server's PINGs.
class raw_conn {
 public:
  ~raw_conn() {
    if (_fd >= 0) ::close(_fd);
  }
  bool open(const config& cfg, const std::string& reply_filter, std::string& err) {
    std::string host;
    int port = 0;
    if (!parse_url(cfg.url, host, port)) return err = "cannot parse url " + cfg.url, false;
    _fd = dial(host, port);
    if (_fd < 0) return err = "cannot connect", false;
    const std::string hello = std::string(kRawConnect) + "SUB " + reply_filter + " 1\r\nPING\r\n";
    if (!write_all(_fd, hello.data(), hello.size()) || !read_until(_fd, "PONG\r\n"))
      return err = "raw connection handshake failed", false;
    timeval none{0, 0};  // read_until set a receive timeout; the reader blocks until shutdown
    setsockopt(_fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
    return true;
  }
  bool write(const std::string& bytes) {
    std::lock_guard<std::mutex> g(_write_mu);
    return write_all(_fd, bytes.data(), bytes.size());
  }
  void shutdown() { ::shutdown(_fd, SHUT_RDWR); }
  // Runs until EOF, -ERR or on_msg returning false; returns the reason.
  std::string read(const std::function<bool(std::string_view subject, std::string_view body)>& on_msg) {
    std::string in;
    std::size_t pos = 0;
    std::vector<char> tmp(1 << 16);
    for (;;) {
      const ssize_t got = ::recv(_fd, tmp.data(), tmp.size(), 0);
      if (got <= 0) return "connection closed";
      in.append(tmp.data(), static_cast<std::size_t>(got));
      for (;;) {
        const std::size_t eol = in.find("\r\n", pos);
        if (eol == std::string::npos) break;
        const std::string_view line(in.data() + pos, eol - pos);
        if (line.starts_with("MSG ")) {
          // MSG <subject> <sid> [reply] <size>
          const std::size_t s1 = line.find(' ', 4);
          const std::string_view subject = line.substr(4, s1 - 4);
          const std::size_t size = std::strtoull(std::string(line.substr(line.rfind(' ') + 1)).c_str(), nullptr, 10);
          if (in.size() < eol + 2 + size + 2) break;  // the body is not all here yet
          if (!on_msg(subject, std::string_view(in.data() + eol + 2, size))) return {};
          pos = eol + 2 + size + 2;
        } else {
          if (line.starts_with("-ERR")) return std::string(line);
          if (line == "PING") write("PONG\r\n");
          pos = eol + 2;
        }
      }
      if (pos > (1 << 20) || pos == in.size()) {
        in.erase(0, pos);
        pos = 0;
      }
    }
  }

 private:
  int _fd = -1;
  std::mutex _write_mu;
};

// One message as bytes: HPUB when it has headers, PUB otherwise.
void encode(std::string& out, const std::string& subj, std::string_view reply, std::string_view hdr,
            const std::string& payload) {
  out += hdr.empty() ? "PUB " : "HPUB ";
  out += subj;
  if (!reply.empty()) {
    out += ' ';
    out += reply;
  }
  if (!hdr.empty()) {
    out += ' ';
    out += std::to_string(hdr.size());
  }
  out += ' ';
  out += std::to_string(hdr.size() + payload.size());
  out += "\r\n";
  out += hdr;
  out += payload;
  out += "\r\n";
}

// What the reader and the writer share, under one mutex (a few events per batch).
struct shared_state {
  std::mutex mu;
  std::condition_variable cv;
  std::string error;
  bool reader_done = false;
};

// "<prefix><number>..." -> number.
uint64_t number_after(std::string_view s, std::string_view prefix) {
  return s.starts_with(prefix) ? std::strtoull(std::string(s.substr(prefix.size(), 24)).c_str(), nullptr, 10) : ~0ull;
}

uint64_t json_u64(std::string_view body, const std::string& key) {
  const auto p = body.find("\"" + key + "\":");
  return p == std::string_view::npos ? 0 : std::strtoull(std::string(body.substr(p + key.size() + 3, 24)).c_str(), nullptr, 10);
}

// Waits (at most 10 s without news) for `ready`; false with r.error set on failure.
template <typename Pred>
bool wait_for(shared_state& st, std::unique_lock<std::mutex>& lk, result& r, Pred ready) {
  while (!ready()) {
    if (!st.error.empty()) return r.error = st.error, false;
    if (st.reader_done) return r.error = "reader stopped", false;
    if (st.cv.wait_for(lk, std::chrono::seconds(10)) == std::cv_status::timeout && !ready())
      return r.error = "no reply from the server within 10 s", false;
  }
  return true;
}

}  // namespace

result run_js_batch_pipelined(const config& cfg, progress& prog, batch_run& run) {
  result r;
  raw_conn c;
  const std::string reply_prefix = "_INBOX.pgbp.";
  if (!c.open(cfg, reply_prefix + "*", r.error)) return r;
  const uint64_t total = run.warm_batches + run.batches;
  const std::string count_key = "\"count\":" + std::to_string(run.n);
  std::vector<int64_t> t0(total);
  shared_state st;
  uint64_t acked = 0;
  std::thread reader([&] {
    const std::string why = c.read([&](std::string_view subject, std::string_view body) {
      const uint64_t b = number_after(subject, reply_prefix);
      const int64_t t = now_ns();
      std::lock_guard<std::mutex> g(st.mu);
      if (b >= total || body.find(count_key) == std::string_view::npos) {
        st.error = "the commit did not answer with the batch PubAck: " + std::string(body);
      } else {
        if (b >= run.warm_batches) {
          r.samples_ns.push_back(t - t0[b]);
          r.received += static_cast<uint64_t>(run.n);
          prog.done = r.received;
        }
        ++acked;
      }
      st.cv.notify_all();
      return st.error.empty();
    });
    std::lock_guard<std::mutex> g(st.mu);
    if (st.error.empty() && acked < total) st.error = why;
    st.reader_done = true;
    st.cv.notify_all();
  });
  const uint64_t window = static_cast<uint64_t>(cfg.pipeline);
  std::string buf, hdr;
  uint64_t b = 0;
  for (; run.more(b); ++b) {
    {
      std::unique_lock<std::mutex> lk(st.mu);
      if (!wait_for(st, lk, r, [&] { return b - acked < window; })) break;
    }
    buf.clear();
    const std::string id = "pgbp" + std::to_string(b);
    for (int k = 1; k <= run.n; ++k) {
      hdr = "NATS/1.0\r\nNats-Batch-Id: " + id + "\r\nNats-Batch-Sequence: " + std::to_string(k) + "\r\n";
      if (k == run.n) hdr += "Nats-Batch-Commit: 1\r\n";
      hdr += "\r\n";
      encode(buf, run.subj, k == run.n ? reply_prefix + std::to_string(b) : std::string(), hdr, run.payload);
    }
    {
      std::lock_guard<std::mutex> g(st.mu);
      t0[b] = now_ns();
    }
    if (!c.write(buf)) {
      r.error = "write failed";
      break;
    }
    r.sent += static_cast<uint64_t>(run.n);
  }
  if (r.error.empty()) {
    std::unique_lock<std::mutex> lk(st.mu);
    wait_for(st, lk, r, [&] { return acked == b; });
  }
  r.elapsed_s = std::chrono::duration<double>(clock_type::now() - run.start).count();
  c.shutdown();
  reader.join();
  return r;
}

result run_js_fast_batch_pipelined(const config& cfg, progress& prog, batch_run& run) {
  result r;
  raw_conn c;
  const std::string prefix = "_INBOX.pgfp.";
  if (!c.open(cfg, prefix + ">", r.error)) return r;
  const uint64_t total = run.warm_batches + run.batches;
  const std::string count_key = "\"count\":" + std::to_string(run.n);
  // Per batch: flow state from the reader, progress from the writer (as Orbit's fast
  // publisher: at most two ack windows unacknowledged; the first reply tells the window).
  struct fbatch {
    int next = 1;         // batch sequence to send next
    uint64_t acked = 0;   // highest batch sequence acknowledged
    uint64_t window = 0;  // 0 = the initial ack has not come yet
    bool done = false;
    int64_t t0 = 0;
  };
  std::vector<fbatch> batches(total);
  shared_state st;
  std::deque<uint64_t> open;  // batches being sent or waiting for their PubAck
  std::thread reader([&] {
    const std::string why = c.read([&](std::string_view subject, std::string_view body) {
      const uint64_t b = number_after(subject, prefix + "f");
      const int64_t t = now_ns();
      std::lock_guard<std::mutex> g(st.mu);
      if (b >= total) {
        st.error = "reply on an unknown subject " + std::string(subject);
      } else if (body.find("\"type\":\"ack\"") != std::string_view::npos) {
        batches[b].acked = std::max(batches[b].acked, json_u64(body, "seq"));
        batches[b].window = std::max<uint64_t>(1, json_u64(body, "msgs"));
      } else if (body.find("\"type\":") != std::string_view::npos || body.find(count_key) == std::string_view::npos) {
        st.error = "fast batch: " + std::string(body);
      } else {
        batches[b].done = true;
        if (b >= run.warm_batches) {
          r.samples_ns.push_back(t - batches[b].t0);
          r.received += static_cast<uint64_t>(run.n);
          prog.done = r.received;
        }
      }
      st.cv.notify_all();
      return st.error.empty();
    });
    std::lock_guard<std::mutex> g(st.mu);
    st.reader_done = true;
    if (st.error.empty() && !why.empty()) st.error = why;
    st.cv.notify_all();
  });
  const std::size_t window = static_cast<std::size_t>(cfg.pipeline);
  std::string buf, reply;
  uint64_t next_b = 0;
  for (;;) {
    buf.clear();
    {
      std::unique_lock<std::mutex> lk(st.mu);
      while (!open.empty() && batches[open.front()].done) open.pop_front();
      while (open.size() < window && run.more(next_b)) open.push_back(next_b++);
      if (open.empty()) break;
      const int64_t t = now_ns();
      for (const uint64_t b : open) {
        fbatch& f = batches[b];
        if (f.next == 1) f.t0 = t;
        // Message k may go once k - 1 < acked + 2 * window (the first needs no ack).
        while (f.next <= run.n &&
               (f.next == 1 || (f.window > 0 && static_cast<uint64_t>(f.next - 1) < f.acked + 2 * f.window))) {
          const int op = f.next == 1 ? 0 : f.next == run.n ? 2 : 1;
          reply = prefix + "f" + std::to_string(b) + ".100.fail." + std::to_string(f.next) + "." + std::to_string(op) + ".$FI";
          encode(buf, run.subj, reply, {}, run.payload);
          ++f.next;
        }
      }
      if (buf.empty() && !wait_for(st, lk, r, [&] {
            for (const uint64_t b : open) {
              const fbatch& f = batches[b];
              if (f.done || (f.next <= run.n && f.window > 0 &&
                             static_cast<uint64_t>(f.next - 1) < f.acked + 2 * f.window))
                return true;
            }
            return false;
          }))
        break;
    }
    if (!buf.empty() && !c.write(buf)) {
      r.error = "write failed";
      break;
    }
  }
  r.sent = next_b * static_cast<uint64_t>(run.n);
  r.elapsed_s = std::chrono::duration<double>(clock_type::now() - run.start).count();
  c.shutdown();
  reader.join();
  return r;
}

}  // namespace peregrine::bench
