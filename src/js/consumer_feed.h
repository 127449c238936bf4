#pragma once
// The read path of a consumer on a thread apart from its stream's owner (issue 10,
// --consumer_threads), and the way its retention travels back. Pure (no threads, no clock):
// the owner side (feed_writer) and the consumer side (feed_reader) exchange entries and
// requests over two bounded FIFO queues the caller provides (SPSC rings between the two
// threads; plain queues in the unit tests).
//
// The protocol. The reader asks for pages ("matching messages from sequence f, at most n");
// the writer answers each from the store with the matching messages of [from, upto] and
// whether upto was the stream's end at that moment. Once a page reaches the end, the writer
// pushes every new matching message and every removal as it is stored or removed (live).
// Pages and pushes travel through one FIFO queue, so after each entry the reader's window
// is what the store held (for the matching subjects, from the reader's floor up to what it
// has seen). When a push does not fit the queue, or a bulk removal happens (a purge), the
// writer stops pushing and sends `resync` as soon as it fits; the reader then pages again
// from its floor, in a new epoch (pages of an older one are ignored). The reader's window is
// bounded: when it is full the reader asks the writer to pause (pages, no pushes) and asks
// for the next page once the consumer moved its floor. Removals and stored messages never
// change meaning (a removed sequence never comes back), so applying a late one is harmless.
//
// Retention: the reader batches the sequences its consumer no longer needs (`release`) into
// one `released` request; the owner applies them to its group as it does for a local agent.
#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "storage/store.h"

namespace js {

// One stored message, immutable and reference-counted: the owner builds it once per store
// and every remote consumer of the stream shares it; the last holder frees it.
using shared_msg = std::shared_ptr<const storage::stored_msg>;

// Owner -> consumer thread.
struct feed_entry {
  enum class type : std::uint8_t { page, stored, removed, resync };
  type t = type::page;
  std::uint64_t epoch = 0;          // page: the epoch of the read it answers
  std::uint64_t from = 0;           // page: the range it covers, [from, upto]
  std::uint64_t upto = 0;
  bool at_end = false;              // page: upto was the stream's last sequence
  std::uint64_t more = 0;           // page: matching messages after upto when it was read
  std::vector<shared_msg> msgs;     // page: the matching messages of the range; stored: one
  std::vector<std::uint64_t> seqs;  // removed
};

// Consumer thread -> owner.
struct feed_request {
  enum class type : std::uint8_t { read, pause, released };
  type t = type::read;
  std::uint64_t epoch = 0;          // read
  std::uint64_t from = 0;           // read: first sequence wanted
  std::uint32_t max = 0;            // read: at most this many messages
  std::vector<std::uint64_t> seqs;  // released: sequences the consumer no longer needs
  std::uint64_t below = 0;          // released: nor anything below this (its ack floor + 1)
  std::uint64_t gen = 0;            // released: the reader's generation (a RESET starts one)
};

// What the writer reads of the stream (on the owner thread), through the consumer's filter.
class feed_store {
 public:
  virtual ~feed_store() = default;
  // The first matching message with seq >= from, if any.
  virtual std::optional<storage::stored_msg> next_matching(std::uint64_t from) = 0;
  virtual std::uint64_t last_seq() const = 0;
  // Matching messages with seq >= from.
  virtual std::uint64_t count_matching(std::uint64_t from) = 0;
};

// The owner's outbound queue to one consumer thread: false when full (entry not taken).
class feed_queue {
 public:
  virtual ~feed_queue() = default;
  virtual bool try_push(feed_entry& e) = 0;
};

class feed_writer {
 public:
  enum class mode : std::uint8_t { waiting, paging, live, broken };

  // ---- events on the owner thread; `q` takes what goes to the consumer thread.
  // A message was stored; `matches` = it passes the consumer's filter.
  void on_stored(const shared_msg& m, bool matches, feed_queue& q);
  // Messages were removed one by one (limits, retention, deletes).
  void on_removed(const std::vector<std::uint64_t>& seqs, feed_queue& q);
  // Many went at once (a purge): the reader re-pages.
  void on_bulk_removed(feed_queue& q);
  // A request from the consumer thread; `released` gets the sequences of a released request.
  void on_request(feed_request r, feed_store& s, feed_queue& q, std::vector<std::uint64_t>& released);
  // Retries what did not fit the queue; returns work done.
  std::size_t poll(feed_store& s, feed_queue& q);

  mode state() const { return _mode; }
  bool has_pending_read() const { return _read.has_value(); }

 private:
  bool answer(feed_store& s, feed_queue& q);  // the pending read, if it fits
  bool push(feed_entry e, feed_queue& q);     // false: full, the writer is broken now
  void send_resync(feed_queue& q);

  mode _mode = mode::waiting;
  std::uint64_t _covered = 0;  // paging/live: removals up to here concern the reader
  std::optional<feed_request> _read;
};

class feed_reader {
 public:
  // `floor`: the first sequence the consumer may need; at most `max_msgs` messages kept,
  // pages of at most `page_max` (both >= 1).
  feed_reader(std::uint64_t floor, std::size_t max_msgs, std::uint32_t page_max);

  // An entry from the owner, in order.
  void on_entry(feed_entry&& e);
  // The next request for the owner, or nullopt; a request that did not fit the queue is
  // given back with `unsend` and offered again first.
  std::optional<feed_request> take_request();
  void unsend(feed_request r);

  // The consumer needs nothing below `seq` any more (its ack floor): kept messages below go.
  void forget_below(std::uint64_t seq);
  // CONSUMER.RESET to `seq`, perhaps below the floor: the window starts over empty there and
  // is paged again in a new epoch (stored pushes still in flight are left to the pages).
  void rewind(std::uint64_t seq);
  // Drops kept messages for which `gone(seq)` holds (a purge seen from the owner's store).
  template <typename F>
  void erase_if(F gone) {
    std::erase_if(_window, [&](const auto& kv) { return gone(kv.first); });
  }
  // Retention: the consumer no longer needs `seq`, nor (release_below) anything below
  // `seq`; sent in the next `released`.
  void release(std::uint64_t seq) { _released.push_back(seq); }
  void release_below(std::uint64_t seq) { _release_below = std::max(_release_below, seq); }
  // CONSUMER.RESET: the consumer needs everything from `seq` again. Releases not sent yet
  // are dropped and later ones carry the next generation (the owner, starting its picture
  // over at `seq` with it, ignores what an older one sent).
  void restart_releases(std::uint64_t seq);
  std::uint64_t release_gen() const { return _gen; }

  // Reads for the consumer's message_source (null: not there, or not seen yet).
  const storage::stored_msg* next_matching(std::uint64_t from) const;
  const storage::stored_msg* find(std::uint64_t seq) const;
  // Matching messages with seq >= from as far as the reader knows (the window, plus what
  // the last page said lay beyond it while the reader is not live).
  std::uint64_t count_matching(std::uint64_t from) const;

  bool live() const { return _state == state::live; }
  // Up to here (from the floor) the window is exactly what the store holds; above it a
  // message may be missing or already removed (pages of the epoch have not reached it).
  // An agent treats a missing message as removed only at or below this.
  std::uint64_t known_upto() const { return live() ? UINT64_MAX : _known_upto; }
  std::size_t size() const { return _window.size(); }
  std::uint64_t floor() const { return _floor; }
  std::uint64_t epoch() const { return _epoch; }

 private:
  enum class state : std::uint8_t { need_read, reading, live, pausing };
  void start_epoch();
  std::size_t room() const { return _window.size() >= _max ? 0 : _max - _window.size(); }

  std::map<std::uint64_t, shared_msg> _window;
  std::uint64_t _floor;
  std::size_t _max;
  std::uint32_t _page_max;
  state _state = state::need_read;
  std::uint64_t _epoch = 1;
  std::uint64_t _next_from;  // need_read/pausing: the next page starts here
  std::uint64_t _beyond = 0;  // not live: matching messages past the last page (when read)
  std::uint64_t _known_upto = 0;
  bool _pause_sent = false;
  std::deque<feed_request> _unsent;
  std::vector<std::uint64_t> _released;
  std::uint64_t _release_below = 0, _sent_below = 0;
  std::uint64_t _gen = 0;
};

// The owner's picture of what one remote consumer still needs, kept from its `released`
// requests, for interest and work-queue retention (a local agent is asked directly). A
// matching message is needed from the consumer's start until released; the consumer's
// floor bounds the set of single releases it keeps.
class remote_interest {
 public:
  explicit remote_interest(std::uint64_t start) : _below(start) {}
  // What a `released` request newly released: single sequences, and the range
  // [range_from, range_to) (empty when equal), which the group walks in its store.
  struct change {
    std::vector<std::uint64_t> seqs;
    std::uint64_t range_from = 0, range_to = 0;
  };
  change apply(const feed_request& r);
  // Whether the consumer may still need `seq` (the filter is the group's to check).
  bool needs(std::uint64_t seq) const { return seq >= _below && !_released.count(seq); }
  std::uint64_t below() const { return _below; }
  std::size_t singles() const { return _released.size(); }

 private:
  std::uint64_t _below;  // nothing below is needed
  std::set<std::uint64_t> _released;
};

}  // namespace js
