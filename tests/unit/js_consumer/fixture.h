#pragma once
// Test harness: an in-memory message_source and a driver that plays the consumer agent
// (ticks at every deadline, collects actions) on a manual time line.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/js/consumer.h"

namespace js::test {

struct fake_store final : message_source {
  struct msg {
    std::string subject;
    std::int64_t ts = 0;
    std::uint32_t hdr = 0;
    std::uint32_t payload = 0;
  };
  std::map<std::uint64_t, msg> msgs;
  std::uint64_t last = 0;
  std::function<bool(const std::string&)> filter;  // empty = everything matches

  std::uint64_t add(std::string subject, std::uint32_t payload = 10, std::uint32_t hdr = 0) {
    ++last;
    msgs[last] = {std::move(subject), std::int64_t(1'700'000'000'000'000'000 + last), hdr, payload};
    return last;
  }
  bool matches(const msg& m) const { return !filter || filter(m.subject); }
  msg_meta meta(std::uint64_t seq, const msg& m) const {
    return {seq, m.ts, std::uint32_t(m.subject.size()), m.hdr, m.payload};
  }
  std::optional<msg_meta> next_matching(std::uint64_t from) override {
    for (auto it = msgs.lower_bound(from); it != msgs.end(); ++it)
      if (matches(it->second)) return meta(it->first, it->second);
    return std::nullopt;
  }
  std::optional<msg_meta> load(std::uint64_t seq) override {
    auto it = msgs.find(seq);
    if (it == msgs.end()) return std::nullopt;
    return meta(seq, it->second);
  }
  std::uint64_t count_matching(std::uint64_t from) override {
    std::uint64_t n = 0;
    for (auto it = msgs.lower_bound(from); it != msgs.end(); ++it) n += matches(it->second);
    return n;
  }
};

template <typename T>
std::vector<T> only(const actions& a) {
  std::vector<T> v;
  for (const auto& x : a)
    if (auto* p = std::get_if<T>(&x)) v.push_back(*p);
  return v;
}

inline consumer_params explicit_params() {
  consumer_params p;
  p.stream_name = "S";
  p.consumer_name = "C";
  p.ack = ack_policy::explicit_;
  return p;
}

inline pull_request pull(std::int64_t batch, base::nanos expires = 0) {
  pull_request r;
  r.batch = batch;
  r.expires = expires;
  return r;
}

struct harness {
  fake_store store;
  base::nanos now = 1000 * base::kSecond;
  std::unique_ptr<consumer_state_machine> c;
  actions out;

  void make(consumer_params p) { c = std::make_unique<consumer_state_machine>(std::move(p), store, now); }
  void publish(int n, const std::string& subject = "s.a", std::uint32_t payload = 10) {
    for (int i = 0; i < n; ++i) store.add(subject, payload);
    c->on_stream_advanced(store.last, now, out);
  }
  void request(const std::string& reply, const pull_request& r) { c->on_pull(reply, r, now, out); }
  // Plays the agent: tick at every deadline up to now + d, then at now + d.
  void advance(base::nanos d) {
    const base::nanos target = now + d;
    for (int guard = 0; guard < 100000; ++guard) {
      base::nanos t = c->next_deadline();
      if (t > target) break;
      now = std::max(now, t);
      c->tick(now, out);
    }
    now = target;
    c->tick(now, out);
  }
  bool ack(const delivery& d, std::string_view body) {
    ack_subject s;
    s.stream = "S";
    s.consumer = "C";
    s.delivered = d.delivery_count;
    s.stream_seq = d.stream_seq;
    s.consumer_seq = d.consumer_seq;
    s.pending = d.pending;
    return c->on_ack(s, parse_ack_body(body), now, out);
  }
  bool ack_seq(std::uint64_t sseq, std::string_view body) {
    delivery d;
    d.stream_seq = sseq;
    auto it = c->pending().find(sseq);
    d.consumer_seq = it == c->pending().end() ? 0 : it->second.consumer_seq;
    d.delivery_count = 1;
    return ack(d, body);
  }
  std::vector<delivery> take_deliveries() {
    auto v = only<delivery>(out);
    std::erase_if(out, [](const action& a) { return std::holds_alternative<delivery>(a); });
    return v;
  }
  std::vector<status_reply> take_statuses() {
    auto v = only<status_reply>(out);
    std::erase_if(out, [](const action& a) { return std::holds_alternative<status_reply>(a); });
    return v;
  }
  std::vector<advisory> take_advisories() {
    auto v = only<advisory>(out);
    std::erase_if(out, [](const action& a) { return std::holds_alternative<advisory>(a); });
    return v;
  }
  std::vector<std::uint64_t> take_released() {
    std::vector<std::uint64_t> v;
    for (const auto& r : only<released>(out)) v.push_back(r.stream_seq);
    std::erase_if(out, [](const action& a) { return std::holds_alternative<released>(a); });
    return v;
  }
  consumer_numbers info() const { return c->numbers(now); }
};

}  // namespace js::test
