#pragma once
// A group_host for driving stream groups in tests: no hub, no threads, a manual clock.
// Publishes reach the group through the subscriptions it made; what it publishes and delivers
// comes back as records (take()).
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "src/core/subject.h"
#include "src/js/stream_group.h"

namespace js::test {

struct sent {
  std::string to, subject, reply, headers, payload;
};

class fake_host final : public group_host {
 public:
  std::uint64_t subscribe(std::string_view subject, std::string_view, core::internal_handler* h) override {
    _subs.push_back({++_next_id, std::string(subject), h});
    return _next_id;
  }
  void unsubscribe(std::uint64_t id) override {
    std::erase_if(_subs, [id](const sub& s) { return s.id == id; });
  }
  void publish(std::string_view subject, std::string_view reply, std::string_view headers,
               std::string_view payload) override {
    out.push_back({std::string(subject), std::string(subject), std::string(reply), std::string(headers),
                   std::string(payload)});
  }
  void deliver(std::string_view to, std::string_view subject, std::string_view reply, std::string_view headers,
               std::string_view payload) override {
    out.push_back({std::string(to), std::string(subject), std::string(reply), std::string(headers),
                   std::string(payload)});
  }
  bool has_interest(std::string_view subject) override { return listeners.contains(std::string(subject)); }
  const base::clock& clk() const override { return clock; }
  int wake_eventfd() override { return -1; }
  void wake(stream_group&) override { ++wakes; }
  const std::string& domain() const override { return _empty; }
  const std::string& server_name() const override { return _name; }
  const core::server_options& options() const override { return _opts; }
  void report_usage(storage_type t, std::int64_t delta) override { used[t == storage_type::memory ? 0 : 1] += delta; }
  bool storage_exhausted(storage_type t) const override { return used[t == storage_type::memory ? 0 : 1] > limit; }
  std::size_t* fast_batch_counter() override { return &_fast; }

  // A client publish: every matching internal subscription hears it (as the sublist would).
  std::size_t inject(std::string_view subject, std::string_view reply, std::string_view payload,
                     std::string_view headers = {}) {
    core::inbound_msg m;
    m.subject = subject;
    m.reply = reply;
    m.headers = headers;
    m.payload = payload;
    std::vector<core::internal_handler*> hs;
    for (const auto& s : _subs)
      if (core::subject_matches(s.subject, subject)) hs.push_back(s.h);
    for (auto* h : hs) h->on_msg(m);
    return hs.size();
  }
  bool subscribed(std::string_view subject) const {
    return std::any_of(_subs.begin(), _subs.end(), [&](const sub& s) { return s.subject == subject; });
  }
  std::vector<sent> take() { return std::exchange(out, {}); }

  base::manual_clock clock{0, 1'700'000'000 * base::kSecond};
  std::set<std::string> listeners;  // reply subjects someone listens on (pull requesters)
  std::vector<sent> out;
  int wakes = 0;
  std::int64_t used[2] = {0, 0};  // memory, file: what the groups reported
  std::int64_t limit = INT64_MAX;

 private:
  struct sub {
    std::uint64_t id;
    std::string subject;
    core::internal_handler* h;
  };
  std::vector<sub> _subs;
  std::uint64_t _next_id = 0;
  std::string _empty, _name = "fake";
  core::server_options _opts;
  std::size_t _fast = 0;
};

}  // namespace js::test
