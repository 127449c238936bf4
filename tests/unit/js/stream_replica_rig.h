// The replica unit tests' rig: a fake log the test commits by hand, and a stream replica over it.
#pragma once

#include <gtest/gtest.h>

#include "src/js/stream_replica.h"
#include "storage/memory_store.h"

namespace stream_replica_rig {

using js::replica_reply;
using js::submit_status;


// The log a test commits by hand: proposals collect until commit() hands them back.
class fake_log final : public repl::replicated_log {
 public:
  bool leader = true;
  std::uint64_t current_term = 1;
  std::uint64_t next_index = 1;
  std::vector<repl::committed_entry> proposed;  // not yet committed by the test
  std::vector<repl::committed_entry> history;   // every proposal

  repl::propose_result propose(std::span<const std::uint8_t> d) override {
    if (!leader) return {repl::propose_status::not_leader, 0};
    repl::committed_entry e;
    e.index = next_index++;
    e.value.term = current_term;
    e.value.data.assign(d.begin(), d.end());
    proposed.push_back(e);
    history.push_back(e);
    return {repl::propose_status::ok, e.index};
  }
  bool is_leader() const override { return leader; }
  std::uint64_t term() const override { return current_term; }
};

inline js::stream_config config() {
  js::stream_config c;
  c.name = "ORDERS";
  c.subjects = {"orders.>"};
  c.storage = js::storage_type::memory;
  c.duplicate_window = js::kDefaultDuplicateWindow;
  c.max_msg_size = -1;
  c.max_msgs = -1;
  c.max_bytes = -1;
  c.max_msgs_per_subject = -1;
  return c;
}

constexpr std::int64_t kNow = 1'700'000'000'000'000'000;

struct rig {
  explicit rig(js::stream_config c = config()) : replica(std::move(c), store, log, "s1") {}
  // Applies every proposal so far, in order.
  std::vector<replica_reply> commit_all() {
    std::vector<replica_reply> out;
    // What applying proposes (a seed after leader_start) waits for the next call.
    const auto entries = std::exchange(log.proposed, {});
    for (const auto& e : entries) replica.apply(e, out);
    return out;
  }
  void become_ready() {
    replica.on_role(kNow);
    commit_all();
  }
  submit_status pub(std::string subject, std::string hdr = "", std::uint64_t token = 1) {
    return replica.publish(kNow, subject, hdr, "data", token, replies);
  }
  storage::memory_store store;
  fake_log log;
  js::stream_replica replica;
  std::vector<replica_reply> replies;
};

}  // namespace stream_replica_rig
