// Direct get ($JS.API.DIRECT.GET.<stream>[.<subject>]): raw messages with Nats-* headers,
// batches with Nats-Num-Pending and an EOB sentinel, multi-last.
#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "src/js/api_errors.h"
#include "src/js/direct_get.h"
#include "src/js/json_util.h"
#include "src/js/stream.h"

namespace js {

namespace {

constexpr std::size_t kMultiLastMax = 1024;
constexpr std::uint64_t kDefaultMaxBytes = 64ull << 20;

std::string status_only(std::string_view status, std::string_view extra = {}) {
  return "NATS/1.0 " + std::string(status) + "\r\n" + std::string(extra) + "\r\n";
}

// One message as a direct get answers it: its stored headers plus the Nats-* ones.
void send_message(const direct_send& send, std::string_view stream_name, const storage::stored_msg& m, bool no_hdr,
                  std::string_view extra) {
  if (no_hdr) return send("", m.payload);
  std::string h;
  if (m.headers.size() >= 12 && m.headers.ends_with("\r\n\r\n")) {
    h = m.headers.substr(0, m.headers.size() - 2);  // keep the stored lines, drop the blank one
  } else {
    h = "NATS/1.0\r\n";
  }
  h += "Nats-Stream: " + std::string(stream_name) + "\r\n";
  h += "Nats-Subject: " + m.subject + "\r\n";
  h += "Nats-Sequence: " + std::to_string(m.seq) + "\r\n";
  h += "Nats-Time-Stamp: " + base::rfc3339_nano(m.ts) + "\r\n";
  h += extra;
  h += "\r\n";
  send(h, m.payload);
}

}  // namespace

void stream::send_direct(std::string_view reply, const storage::stored_msg& m, bool no_hdr, std::string_view extra) {
  send_message([&](std::string_view headers, std::string_view payload) { _host.publish(reply, "", headers, payload); },
               _cfg.name, m, no_hdr, extra);
}

void stream::direct_get(const core::inbound_msg& m) {
  if (_closed || m.reply.empty()) return;
  serve_direct_get(_cfg.name, *_store, m, [&](std::string_view headers, std::string_view payload) {
    _host.publish(m.reply, "", headers, payload);
  });
}

void serve_direct_get(std::string_view stream_name, storage::stream_store& st, const core::inbound_msg& m,
                      const direct_send& send) {
  if (m.reply.empty()) return;
  auto status = [&](std::string_view s, std::string_view extra = {}) { send(status_only(s, extra), ""); };
  if (!m.headers.empty()) {
    if (auto lvl = find_header(m.headers, "Nats-Required-Api-Level")) {
      auto want = parse_u64(*lvl);
      if (!want || *want > static_cast<std::uint64_t>(kApiLevel)) return status("412 Required Api Level");
    }
  }
  // DIRECT.GET.<stream>: our name, or the origin's when serving as its mirror (mirror_direct).
  constexpr std::string_view marker = "DIRECT.GET.";
  auto pos = m.subject.find(marker);
  if (pos == std::string_view::npos) return;
  std::string_view tail = m.subject.substr(pos + marker.size());
  tail = tail.substr(std::min(tail.size(), tail.find('.')));
  direct_request r;
  std::vector<std::string> keys;
  std::string_view body = m.payload;
  while (!body.empty() && std::isspace(static_cast<unsigned char>(body.front()))) body.remove_prefix(1);

  if (!tail.empty()) {
    tail.remove_prefix(1);  // the '.'
    if (tail.empty()) return status("408 Bad Request");
    if (!body.empty()) {
      if (auto e = decode_direct_request(body, r, keys)) return status(*e);
      for (const auto& k : keys)
        if (k != "max_bytes" && k != "no_hdr") return status("408 Bad Request");
    }
    r.last_by = std::string(tail);
  } else {
    if (body.empty()) return status("408 Empty Request");
    if (auto e = decode_direct_request(body, r, keys)) return status(*e);
    if (r.seq == 0 && r.last_by.empty() && r.next_by.empty() && r.multi_last.empty() && !r.start_time)
      return status("408 Empty Request");
    const bool conflict = (r.seq > 0 && !r.last_by.empty()) || (r.seq > 0 && r.start_time) ||
                          (r.start_time && !r.last_by.empty()) || (!r.last_by.empty() && !r.next_by.empty()) ||
                          (!r.last_by.empty() && r.batch > 0) || (!r.last_by.empty() && !r.multi_last.empty()) ||
                          (!r.next_by.empty() && !r.multi_last.empty()) || (r.up_to_seq > 0 && r.up_to_time);
    if (conflict) return status("408 Bad Request");
  }
  const std::uint64_t max_bytes = r.max_bytes > 0 ? static_cast<std::uint64_t>(r.max_bytes) : kDefaultMaxBytes;

  if (!r.multi_last.empty()) {
    // Ceiling: up_to_seq, or the last sequence stored before up_to_time.
    std::uint64_t ceiling = r.up_to_seq > 0 ? r.up_to_seq : st.last_seq();
    if (r.up_to_time) {
      auto t = st.seq_for_time(*r.up_to_time);
      ceiling = t.ok() ? (*t > 0 ? *t - 1 : 0) : st.last_seq();
      if (ceiling < st.first_seq()) return status("404 No Results");
    }
    std::map<std::string, std::uint64_t> last;  // subject -> last seq <= ceiling
    if (ceiling >= st.last_seq()) {
      for (const auto& f : r.multi_last)
        for (const auto& [subj, n] : st.subject_counts(f)) {
          (void)n;
          if (auto msg = st.load_last(subj); msg.ok()) last[subj] = msg->seq;
          if (last.size() > kMultiLastMax) return status("413 Too Many Results");
        }
    } else {
      for (std::uint64_t s = st.first_seq(); s <= ceiling;) {
        auto msg = st.load_next(r.multi_last, s);
        if (!msg.ok() || msg->seq > ceiling) break;
        last[msg->subject] = msg->seq;
        if (last.size() > kMultiLastMax) return status("413 Too Many Results");
        s = msg->seq + 1;
      }
    }
    std::vector<std::uint64_t> seqs;
    for (const auto& [subj, s] : last)
      if (s >= r.seq) seqs.push_back(s);
    std::sort(seqs.begin(), seqs.end());
    if (seqs.empty()) return status("404 No Results");
    std::uint64_t sent = 0, bytes = 0, prev = 0;
    const std::uint64_t limit = r.batch > 0 ? static_cast<std::uint64_t>(r.batch) : seqs.size();
    for (std::size_t i = 0; i < seqs.size() && sent < limit && (sent == 0 || bytes < max_bytes); ++i) {
      auto msg = st.load(seqs[i]);
      if (!msg.ok()) return status("404 Message Not Found");
      const std::uint64_t pending = seqs.size() - i - 1;
      send_message(send, stream_name, *msg, r.no_hdr,
                  "Nats-Num-Pending: " + std::to_string(pending) + "\r\nNats-Last-Sequence: " + std::to_string(prev) + "\r\n");
      bytes += msg->subject.size() + msg->headers.size() + msg->payload.size();
      prev = msg->seq;
      ++sent;
    }
    return status("204 EOB", "Nats-Num-Pending: " + std::to_string(seqs.size() - sent) +
                                 "\r\nNats-Last-Sequence: " + std::to_string(prev) +
                                 "\r\nNats-UpTo-Sequence: " + std::to_string(ceiling) + "\r\n");
  }

  std::uint64_t seq = r.seq;
  if (r.start_time) {
    auto t = st.seq_for_time(*r.start_time);
    if (!t.ok()) return status("404 Message Not Found");
    seq = *t;
  }
  if (r.batch <= 0) {
    base::result<storage::stored_msg> msg = base::errc::not_found;
    if (!r.last_by.empty()) msg = st.load_last(r.last_by);
    else if (!r.next_by.empty() || r.start_time) msg = st.load_next(r.next_by, seq);
    else msg = st.load(seq);
    if (!msg.ok()) return status("404 Message Not Found");
    return send_message(send, stream_name, *msg, r.no_hdr, {});
  }

  // Batch: pending = matching messages at or after the start, counted once then decremented.
  auto first = st.load_next(r.next_by, seq);
  if (!first.ok()) return status("404 Message Not Found");
  std::uint64_t pending = 0;
  if (first->seq <= st.first_seq()) {
    if (r.next_by.empty()) {
      pending = st.state(false).msgs;
    } else {
      for (const auto& [subj, n] : st.subject_counts(r.next_by)) pending += n;
    }
  } else {
    for (std::uint64_t s = first->seq;;) {
      auto msg = st.load_next(r.next_by, s);
      if (!msg.ok()) break;
      ++pending;
      s = msg->seq + 1;
    }
  }
  std::uint64_t sent = 0, bytes = 0, prev = 0;
  auto msg = std::move(first);
  while (msg.ok() && sent < static_cast<std::uint64_t>(r.batch) && (sent == 0 || bytes < max_bytes)) {
    if (pending > 0) --pending;
    send_message(send, stream_name, *msg, r.no_hdr,
                "Nats-Num-Pending: " + std::to_string(pending) + "\r\nNats-Last-Sequence: " + std::to_string(prev) + "\r\n");
    bytes += msg->subject.size() + msg->headers.size() + msg->payload.size();
    prev = msg->seq;
    ++sent;
    msg = st.load_next(r.next_by, prev + 1);
  }
  status("204 EOB", "Nats-Num-Pending: " + std::to_string(pending) + "\r\nNats-Last-Sequence: " +
                        std::to_string(prev) + "\r\n");
}

}  // namespace js
