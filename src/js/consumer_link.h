#pragma once
// One consumer on a consumer thread apart from its stream's owner (--consumer_threads, issue
// 10): the pair of bounded SPSC rings between the two threads and each side's half of
// consumer_feed. The owner's half (writer, store reads) is touched only on the owner thread,
// the reader's half only on the consumer thread; the rings and the atomics are the crossing.
// Entries (stored messages, removals, pages) go owner -> consumer; reads and releases go back.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "src/base/spsc_ring.h"
#include "src/core/subject.h"
#include "src/js/consumer_feed.h"

namespace js {

class consumer_agent;
class stream_group;

// The thread a remote agent runs on: API calls made on the owner run there, the owner
// waiting (the consumer thread never waits for an owner, so this cannot deadlock).
class agent_executor {
 public:
  virtual ~agent_executor() = default;
  virtual bool on_thread() const = 0;
  virtual void run_sync(const std::function<void()>& fn) = 0;
  // An agent here received an ack, a flow-control answer or a pull (/metrics counts them).
  virtual void count_message() {}
};

struct consumer_link {
  static constexpr std::size_t kRing = 1024;         // entries in flight each way
  static constexpr std::size_t kWindow = 8192;       // messages the reader keeps
  static constexpr std::uint32_t kPage = 512;        // messages per page

  consumer_link(std::uint64_t floor, std::uint64_t last) : reader(floor, kWindow, kPage), last_seq(last) {}

  base::spsc_ring<feed_entry> to_consumer{kRing};
  base::spsc_ring<feed_request> to_owner{kRing};

  // ---- owner thread
  feed_writer writer;
  stream_group* group = nullptr;  // null once the consumer left its group
  // The consumer's (empty: every subject): the owner's copy, which pages and live pushes are
  // filtered by and retention asks; the agent's own copy is the consumer thread's. A filter
  // update sets both, the owner waiting, and the reader pages again under the new ones.
  std::vector<std::string> filters;
  bool matches(std::string_view subject) const {
    if (filters.empty()) return true;
    for (const auto& f : filters)
      if (core::subject_matches(f, subject)) return true;
    return false;
  }
  // last_per_subject: its start set (sorted; the last message of each matching subject when
  // it was made). The pages below its end hold only these; empty once a restored state
  // resumes the consumer (as an owner-thread agent drops its set).
  std::vector<std::uint64_t> lps;
  // Retention: what the consumer still needs, from its `released` requests (interest and
  // work-queue streams ask it; limits streams keep it for an update to interest).
  remote_interest interest{1};
  std::uint64_t release_gen = 0;  // `released` of another generation came before a RESET

  // ---- consumer thread
  feed_reader reader;
  std::uint64_t last_seq;  // the highest stored sequence the reader has seen
  std::uint64_t seed_pending = 0;  // num_pending at creation, until the first page arrives
  consumer_agent* agent = nullptr;
  bool started = false;  // the agent's floor is meaningful (restored state applied)

  // ---- both
  std::atomic<bool> owner_woken{false};  // a wake of the group is on its way
  std::atomic<bool> expired{false};      // the agent asks to be deleted (inactive ephemeral)
  std::function<void()> wake_owner;      // set on the owner; called on the consumer thread
  std::function<void()> wake_consumer;   // set by the consumer thread; called on the owner

  // Consumer thread: the reader's requests into the ring (what does not fit stays for the
  // next pump); the owner woken once. True when something went.
  bool send_requests() {
    bool sent = false;
    while (auto r = reader.take_request()) {
      if (!to_owner.try_push(std::move(*r))) {
        reader.unsend(std::move(*r));
        break;
      }
      sent = true;
    }
    if (sent && !owner_woken.exchange(true)) wake_owner();
    return sent;
  }
};

}  // namespace js
