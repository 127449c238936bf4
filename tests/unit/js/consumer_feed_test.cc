// The remote consumer's read path (src/js/consumer_feed.h), without threads: the two bounded
// queues are deques with a capacity, a fake store holds the stream, and a seeded run checks
// that whenever nothing is in flight the reader's window is exactly the store's matching
// messages from its floor up to what it knows, and everything once it is live.
#include "src/js/consumer_feed.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <deque>
#include <map>
#include <string>

#include "src/base/rng.h"

namespace js {
namespace {

// The stream: seq -> subject; "m.*" subjects match the consumer's filter.
struct fake_store final : feed_store {
  std::map<std::uint64_t, std::string> msgs;
  std::uint64_t last = 0;
  static bool matches(const std::string& subject) { return subject.rfind("m.", 0) == 0; }
  std::optional<storage::stored_msg> next_matching(std::uint64_t from) override {
    for (auto it = msgs.lower_bound(from); it != msgs.end(); ++it)
      if (matches(it->second)) return storage::stored_msg{it->first, std::int64_t(it->first), storage::ttl_none, it->second, "", "p"};
    return std::nullopt;
  }
  std::uint64_t last_seq() const override { return last; }
  std::uint64_t count_matching(std::uint64_t from) override {
    std::uint64_t n = 0;
    for (auto it = msgs.lower_bound(from); it != msgs.end(); ++it) n += matches(it->second);
    return n;
  }
};

struct bounded_queue final : feed_queue {
  explicit bounded_queue(std::size_t cap) : cap(cap) {}
  bool try_push(feed_entry& e) override {
    if (q.size() >= cap) return false;
    q.push_back(std::move(e));
    return true;
  }
  std::size_t cap;
  std::deque<feed_entry> q;
};

// One writer, one reader, the two queues between them.
struct link {
  link(std::size_t entries_cap, std::size_t requests_cap, std::uint64_t floor, std::size_t max_msgs, std::uint32_t page)
      : to_reader(entries_cap), requests_cap(requests_cap), reader(floor, max_msgs, page) {}

  void store(const std::string& subject) {
    const std::uint64_t seq = ++s.last;
    s.msgs[seq] = subject;
    writer.on_stored(std::make_shared<const storage::stored_msg>(storage::stored_msg{seq, 0, storage::ttl_none, subject, "", "p"}),
                     fake_store::matches(subject), to_reader);
  }
  void remove(std::uint64_t seq) {
    if (s.msgs.erase(seq)) writer.on_removed({seq}, to_reader);
  }
  void purge_below(std::uint64_t seq) {
    s.msgs.erase(s.msgs.begin(), s.msgs.lower_bound(seq));
    writer.on_bulk_removed(to_reader);
  }
  // Moves at most `n` items each way; returns how many moved.
  std::size_t pump(std::size_t n) {
    std::size_t moved = 0;
    for (std::size_t i = 0; i < n && !to_reader.q.empty(); ++i, ++moved) {
      reader.on_entry(std::move(to_reader.q.front()));
      to_reader.q.pop_front();
    }
    for (std::size_t i = 0; i < n && to_writer.size() < requests_cap; ++i) {
      auto r = reader.take_request();
      if (!r) break;
      to_writer.push_back(std::move(*r));
    }
    for (std::size_t i = 0; i < n && !to_writer.empty(); ++i, ++moved) {
      writer.on_request(std::move(to_writer.front()), s, to_reader, released);
      to_writer.pop_front();
    }
    moved += writer.poll(s, to_reader);
    return moved;
  }
  void settle() {
    for (int i = 0; i < 10000 && (pump(64) > 0 || !to_reader.q.empty() || !to_writer.empty()); ++i) {
    }
  }
  // Nothing in flight: the window is the store's matching messages in [floor, known_upto].
  void check_exact(const char* where) {
    const std::uint64_t top = reader.known_upto();
    for (auto& [seq, subject] : s.msgs) {
      if (seq < reader.floor() || seq > top) continue;
      const storage::stored_msg* m = reader.find(seq);
      ASSERT_EQ(m != nullptr, fake_store::matches(subject)) << where << ": seq " << seq;
      if (m) {
        ASSERT_EQ(m->subject, subject) << where;
      }
    }
    for (std::uint64_t seq = reader.floor(); seq <= std::min(top, s.last); ++seq) {
      if (reader.find(seq)) {
        ASSERT_TRUE(s.msgs.count(seq)) << where << ": removed seq " << seq << " still read";
      }
    }
    if (reader.live()) {
      ASSERT_EQ(reader.count_matching(reader.floor()), s.count_matching(reader.floor())) << where;
    }
  }

  fake_store s;
  bounded_queue to_reader;
  std::size_t requests_cap;
  std::deque<feed_request> to_writer;
  feed_writer writer;
  feed_reader reader;
  std::vector<std::uint64_t> released;
};

TEST(consumer_feed, pages_the_backlog_then_goes_live) {
  link l(64, 64, 1, 1000, 2);
  for (int i = 0; i < 5; ++i) l.store(i % 2 ? "x.1" : "m.1");  // matching: 1, 3, 5
  EXPECT_EQ(l.writer.state(), feed_writer::mode::waiting);
  l.settle();
  EXPECT_TRUE(l.reader.live());
  EXPECT_EQ(l.writer.state(), feed_writer::mode::live);
  EXPECT_EQ(l.reader.size(), 3u);
  ASSERT_NE(l.reader.next_matching(2), nullptr);
  EXPECT_EQ(l.reader.next_matching(2)->seq, 3u);
  l.store("m.2");  // pushed as it is stored
  ASSERT_EQ(l.to_reader.q.size(), 1u);
  EXPECT_EQ(l.to_reader.q.front().t, feed_entry::type::stored);
  l.remove(3);
  l.settle();
  EXPECT_EQ(l.reader.find(3), nullptr);
  ASSERT_NE(l.reader.find(6), nullptr);
  EXPECT_EQ(l.reader.count_matching(1), 3u);
  l.check_exact("live");
}

TEST(consumer_feed, a_page_says_what_lies_beyond_it) {
  link l(64, 64, 1, 1000, 2);
  for (int i = 0; i < 6; ++i) l.store("m.a");
  l.pump(1);  // the first read goes out and is answered
  l.pump(1);  // the first page arrives
  EXPECT_FALSE(l.reader.live());
  EXPECT_EQ(l.reader.size(), 2u);
  EXPECT_EQ(l.reader.count_matching(1), 6u);  // two in the window, four beyond
  EXPECT_EQ(l.reader.known_upto(), 2u);
  l.settle();
  EXPECT_TRUE(l.reader.live());
  EXPECT_EQ(l.reader.count_matching(1), 6u);
}

TEST(consumer_feed, a_push_that_does_not_fit_makes_the_reader_page_again) {
  link l(2, 64, 1, 1000, 100);
  l.settle();
  ASSERT_TRUE(l.reader.live());
  for (int i = 0; i < 5; ++i) l.store("m.a");  // the queue holds 2: the third breaks the feed
  EXPECT_EQ(l.writer.state(), feed_writer::mode::broken);
  l.remove(1);  // unseen by the reader: the resync's pages read the store as it is
  l.settle();
  EXPECT_TRUE(l.reader.live());
  EXPECT_EQ(l.reader.epoch(), 2u);
  EXPECT_EQ(l.reader.size(), 4u);
  EXPECT_EQ(l.reader.find(1), nullptr);
  l.check_exact("after resync");
}

TEST(consumer_feed, a_purge_resyncs) {
  link l(64, 64, 1, 1000, 100);
  for (int i = 0; i < 4; ++i) l.store("m.a");
  l.settle();
  ASSERT_EQ(l.reader.size(), 4u);
  l.purge_below(4);
  l.settle();
  EXPECT_EQ(l.reader.size(), 1u);
  EXPECT_NE(l.reader.find(4), nullptr);
  l.check_exact("after purge");
}

TEST(consumer_feed, a_full_window_pauses_until_the_floor_moves) {
  link l(64, 64, 1, 3, 100);
  l.settle();
  for (int i = 0; i < 6; ++i) {
    l.store("m.a");
    l.settle();
  }
  EXPECT_FALSE(l.reader.live());
  EXPECT_EQ(l.writer.state(), feed_writer::mode::paging);  // paused: no more pushes
  EXPECT_EQ(l.reader.size(), 3u);  // (plus, in general, pushes already under way)
  EXPECT_EQ(l.reader.count_matching(1), 3u);  // what lies beyond is unknown while paused
  l.check_exact("paused");
  l.reader.forget_below(5);
  l.settle();
  EXPECT_TRUE(l.reader.live());
  EXPECT_EQ(l.reader.size(), 2u);  // 5 and 6
  l.check_exact("resumed");
}

TEST(consumer_feed, releases_reach_the_owner_in_order) {
  link l(64, 64, 1, 1000, 100);
  for (int i = 0; i < 3; ++i) l.store("m.a");
  l.settle();
  l.reader.release(2);
  l.reader.release(1);
  l.reader.release(3);
  l.settle();
  EXPECT_EQ(l.released, (std::vector<std::uint64_t>{2, 1, 3}));
}

TEST(consumer_feed, a_request_that_did_not_fit_is_offered_again_first) {
  feed_reader r(1, 10, 10);
  auto first = r.take_request();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->t, feed_request::type::read);
  r.release(7);
  r.unsend(*first);
  auto again = r.take_request();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->t, feed_request::type::read);
  auto rel = r.take_request();
  ASSERT_TRUE(rel);
  EXPECT_EQ(rel->t, feed_request::type::released);
}

TEST(consumer_feed, the_ack_floor_travels_with_the_releases) {
  feed_reader r(1, 10, 10);
  (void)r.take_request();  // the first read
  r.release(5);
  r.release_below(3);
  auto rel = r.take_request();
  ASSERT_TRUE(rel);
  EXPECT_EQ(rel->t, feed_request::type::released);
  EXPECT_EQ(rel->seqs, (std::vector<std::uint64_t>{5}));
  EXPECT_EQ(rel->below, 3u);
  EXPECT_FALSE(r.take_request());  // nothing new
  r.release_below(2);               // never backwards
  EXPECT_FALSE(r.take_request());
}

// CONSUMER.RESET below the window: the reader pages again from there, and a push the live
// writer sent before it saw the new read does not stand above the gap meanwhile.
TEST(consumer_feed, a_rewind_pages_again_from_below_the_floor) {
  link l(64, 64, 1, 1000, 2);
  for (int i = 0; i < 6; ++i) l.store("m.1");
  l.settle();
  ASSERT_TRUE(l.reader.live());
  l.reader.forget_below(5);  // acked up to 4
  EXPECT_EQ(l.reader.find(2), nullptr);
  l.reader.rewind(2);
  l.store("m.1");  // 7, pushed live before the writer hears of the new read
  l.pump(1);       // the push arrives: the window must not show 7 above the missing 2..6
  EXPECT_EQ(l.reader.next_matching(2), nullptr);
  l.settle();
  ASSERT_TRUE(l.reader.live());
  ASSERT_NE(l.reader.next_matching(2), nullptr);
  EXPECT_EQ(l.reader.next_matching(2)->seq, 2u);
  EXPECT_EQ(l.reader.count_matching(2), 6u);
  l.check_exact("rewound");
}

// The owner's picture of a remote consumer's needs, from its releases (interest retention).
TEST(consumer_feed, a_restart_of_the_releases_drops_the_unsent_and_starts_a_generation) {
  feed_reader r(1, 100, 10);
  r.release(3);
  r.release_below(3);
  r.restart_releases(2);
  auto q = r.take_request();
  ASSERT_TRUE(q);
  EXPECT_NE(q->t, feed_request::type::released);  // the read, nothing to release
  r.release(4);
  q = r.take_request();
  ASSERT_TRUE(q);
  EXPECT_EQ(q->t, feed_request::type::released);
  EXPECT_EQ(q->seqs, (std::vector<std::uint64_t>{4}));
  EXPECT_EQ(q->below, 2u);
  EXPECT_EQ(q->gen, 1u);
}

TEST(remote_interest, singles_and_the_floor) {
  remote_interest ri(3);  // starts at 3: 1 and 2 were never needed
  EXPECT_FALSE(ri.needs(2));
  EXPECT_TRUE(ri.needs(3));
  feed_request r;
  r.t = feed_request::type::released;
  r.seqs = {5, 7};
  auto c = ri.apply(r);
  EXPECT_EQ(c.seqs, (std::vector<std::uint64_t>{5, 7}));
  EXPECT_EQ(c.range_from, c.range_to);
  EXPECT_FALSE(ri.needs(5));
  EXPECT_TRUE(ri.needs(4));
  EXPECT_TRUE(ri.needs(6));
  // Released again (a redelivered ack): nothing new.
  EXPECT_TRUE(ri.apply(r).seqs.empty());
  // The floor passes 6: [3, 7) goes, the single 5 is forgotten, 7 kept.
  feed_request f;
  f.t = feed_request::type::released;
  f.below = 7;
  f.seqs = {4};  // covered by the range
  c = ri.apply(f);
  EXPECT_TRUE(c.seqs.empty());
  EXPECT_EQ(c.range_from, 3u);
  EXPECT_EQ(c.range_to, 7u);
  EXPECT_EQ(ri.singles(), 1u);
  EXPECT_FALSE(ri.needs(6));
  EXPECT_FALSE(ri.needs(7));
  EXPECT_TRUE(ri.needs(8));
  // A stale floor changes nothing.
  f.below = 5;
  f.seqs.clear();
  c = ri.apply(f);
  EXPECT_EQ(c.range_from, c.range_to);
  EXPECT_EQ(ri.below(), 7u);
}

// Seeded: stores, removals, purges, a moving floor, tiny queues and windows, partial pumps.
TEST(consumer_feed, seeded_runs_keep_the_window_exact) {
  const int seeds = std::getenv("PEREGRINE_FEED_SEEDS") ? std::atoi(std::getenv("PEREGRINE_FEED_SEEDS")) : 300;
  std::uint64_t resyncs = 0, paused_steps = 0, rewinds = 0;
  for (int seed = 1; seed <= seeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    base::rng rng{std::uint64_t(seed)};
    link l(2 + rng.below(6), 1 + rng.below(4), 1, 2 + rng.below(20), std::uint32_t(1 + rng.below(8)));
    std::uint64_t floor = 1;
    for (int step = 0; step < 300; ++step) {
      paused_steps += l.writer.state() == feed_writer::mode::paging;
      const std::uint64_t op = rng.below(100);
      if (op < 45) l.store(rng.below(10) < 7 ? "m." + std::to_string(rng.below(3)) : "x.1");
      else if (op < 55 && l.s.last > 0) l.remove(1 + rng.below(l.s.last));
      else if (op < 58 && l.s.last > 0) l.purge_below(1 + rng.below(l.s.last + 1));
      else if (op < 68) {
        floor = std::min(floor + rng.below(4), l.s.last + 1);
        l.reader.forget_below(floor);
      } else if (op < 70) {
        floor = 1 + rng.below(floor);  // CONSUMER.RESET, perhaps below the window
        l.reader.rewind(floor);
        ++rewinds;
      } else if (op < 72) {
        l.reader.release(1 + rng.below(l.s.last + 1));
      } else {
        l.pump(1 + rng.below(4));
      }
      if (l.to_reader.q.empty() && l.to_writer.empty() && !l.writer.has_pending_read() &&
          l.writer.state() != feed_writer::mode::broken)
        l.check_exact("quiet");
      if (HasFatalFailure()) return;
    }
    // Room for everything: the reader goes live and sees the whole stream from its floor.
    l.reader.forget_below(std::max<std::uint64_t>(floor, l.s.last));  // at most one message left to keep
    resyncs += l.reader.epoch() - 1;
    l.settle();
    ASSERT_TRUE(l.reader.live());
    l.check_exact("drained");
    if (HasFatalFailure()) return;
  }
  // The runs went through the protocol's hard parts, not only the happy path.
  EXPECT_GT(resyncs, std::uint64_t(seeds));
  EXPECT_GT(paused_steps, std::uint64_t(seeds));
  EXPECT_GT(rewinds, std::uint64_t(seeds));
}

}  // namespace
}  // namespace js
