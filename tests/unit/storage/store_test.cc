// Interface tests: every case runs against memory_store and file_store.
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "storage/file_store.h"
#include "storage/memory_store.h"
#include "tests/unit/storage/temp_dir.h"

namespace storage {
namespace {

constexpr std::int64_t kT0 = 1'700'000'000'000'000'000;
constexpr std::int64_t kSec = 1'000'000'000;

struct memory_kind {
  static std::unique_ptr<stream_store> make(const std::string&) {
    return std::make_unique<memory_store>();
  }
  static constexpr byte_accounting acct = byte_accounting::memory;
};

struct file_kind {
  static std::unique_ptr<stream_store> make(const std::string& dir) {
    file_store_config c;
    c.dir = dir;
    c.block_size = 128 << 10;  // small blocks exercise rollover
    c.cache_bytes = 16 << 10;  // and reads from disk
    auto r = file_store::open(c);
    EXPECT_TRUE(r.ok());
    return r.ok() ? std::unique_ptr<stream_store>(std::move(*r)) : nullptr;
  }
  static constexpr byte_accounting acct = byte_accounting::file;
};

template <typename K>
class store_test : public ::testing::Test {
 protected:
  void SetUp() override { s = K::make(dir.sub("s")); }
  std::uint64_t put(std::string_view subj, std::string_view payload = "data",
                    std::int64_t ts = kT0, std::int64_t ttl = ttl_none,
                    std::string_view hdr = {}) {
    auto r = s->append(subj, hdr, payload, ts, ttl);
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : 0;
  }
  storage_test::temp_dir dir;
  std::unique_ptr<stream_store> s;
};

using kinds = ::testing::Types<memory_kind, file_kind>;
TYPED_TEST_SUITE(store_test, kinds);

TYPED_TEST(store_test, append_load_and_state) {
  auto& s = *this->s;
  EXPECT_EQ(s.state().first_seq, 0u);
  EXPECT_EQ(this->put("orders.created", "abc", kT0 + 1), 1u);
  const std::string hdr = "NATS/1.0\r\nX: y\r\n\r\n";
  EXPECT_EQ(this->put("orders.shipped", "hello", kT0 + 2, ttl_none, hdr), 2u);
  auto m = s.load(2);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->subject, "orders.shipped");
  EXPECT_EQ(m->headers, hdr);
  EXPECT_EQ(m->payload, "hello");
  EXPECT_EQ(m->ts, kT0 + 2);
  EXPECT_EQ(s.load(3).code(), base::errc::not_found);
  auto st = s.state();
  EXPECT_EQ(st.msgs, 2u);
  EXPECT_EQ(st.first_seq, 1u);
  EXPECT_EQ(st.last_seq, 2u);
  EXPECT_EQ(st.first_ts, kT0 + 1);
  EXPECT_EQ(st.last_ts, kT0 + 2);
  EXPECT_EQ(st.num_subjects, 2u);
  EXPECT_EQ(st.bytes, msg_size(TypeParam::acct, 14, 0, 3) + msg_size(TypeParam::acct, 14, hdr.size(), 5));
  EXPECT_EQ(s.append("", {}, "x", kT0).code(), base::errc::invalid_argument);
}

TYPED_TEST(store_test, byte_accounting_matches_nats) {
  // streams.md §2.15: three ORDERS messages, subjects of 14 bytes, payloads 91/90/91.
  for (int n : {91, 90, 91}) this->put("orders.created", std::string(std::size_t(n), 'x'));
  if (TypeParam::acct == byte_accounting::file) EXPECT_EQ(this->s->state().bytes, 404u);
  else EXPECT_EQ(this->s->state().bytes, 3 * 16 + 3 * 14 + 272u);
}

TYPED_TEST(store_test, load_next_with_filters) {
  auto& s = *this->s;
  this->put("a.x");      // 1
  this->put("b.y");      // 2
  this->put("a.y");      // 3
  this->put("c.z.w");    // 4
  this->put("a.x");      // 5
  EXPECT_EQ(s.load_next("a.x", 1)->seq, 1u);
  EXPECT_EQ(s.load_next("a.x", 2)->seq, 5u);
  EXPECT_EQ(s.load_next("a.*", 2)->seq, 3u);
  EXPECT_EQ(s.load_next("*.y", 3)->seq, 3u);
  EXPECT_EQ(s.load_next("c.>", 1)->seq, 4u);
  EXPECT_EQ(s.load_next(">", 4)->seq, 4u);
  EXPECT_EQ(s.load_next("", 2)->seq, 2u);
  EXPECT_EQ(s.load_next("d.*", 1).code(), base::errc::not_found);
  EXPECT_EQ(s.load_next("a.x", 6).code(), base::errc::not_found);
  std::vector<std::string> fs{"c.>", "b.*"};
  EXPECT_EQ(s.load_next(fs, 1)->seq, 2u);
  EXPECT_EQ(s.load_next(fs, 3)->seq, 4u);
  ASSERT_TRUE(s.remove(2).ok());
  EXPECT_EQ(s.load_next(fs, 1)->seq, 4u);
}

// subject_list in slices (a big STREAM.INFO lists 100,000 subjects a loop turn's share at a
// time): every subject once with its count, the store changing between slices without
// losing a subject that stays throughout.
TYPED_TEST(store_test, subject_list_in_slices_survives_changes_between_them) {
  auto& s = *this->s;
  for (int i = 0; i < 50; ++i) this->put("s." + std::to_string(i), "x");
  this->put("s.7", "again");
  std::vector<std::pair<std::string, std::uint64_t>> out;
  std::size_t cursor = 0;
  int slices = 0;
  bool done = false;
  while (!done) {
    done = s.subject_list(out, cursor, 8);
    ++slices;
    if (slices == 2) {  // between slices: one subject leaves, new ones come
      ASSERT_TRUE(s.remove(3).ok());  // s.2's only message
      this->put("s.new1", "y");
      this->put("s.new2", "y");
    }
    ASSERT_LT(slices, 100) << "the cursor does not advance";
  }
  std::map<std::string, std::uint64_t> got;
  for (auto& [subject, n] : out) got[subject] = n;  // a subject listed twice keeps one entry
  for (int i = 0; i < 50; ++i) {
    if (i != 2) {
      EXPECT_EQ(got.count("s." + std::to_string(i)), 1u) << "s." << i << " missing";
    }
  }
  EXPECT_EQ(got["s.7"], 2u);
  EXPECT_EQ(got["s.0"], 1u);
  EXPECT_GE(slices, 7) << "listed in one go, not 8 at a time";
  std::vector<std::pair<std::string, std::uint64_t>> all;
  std::size_t c2 = 0;
  while (!s.subject_list(all, c2, 1000)) {
  }
  EXPECT_EQ(all.size(), s.num_subjects());
}

TYPED_TEST(store_test, load_last_and_subject_counts) {
  auto& s = *this->s;
  this->put("kv.a", "1");
  this->put("kv.b", "2");
  this->put("kv.a", "3");
  this->put("other", "4");
  EXPECT_EQ(s.load_last("kv.a")->payload, "3");
  EXPECT_EQ(s.load_last("kv.*")->seq, 3u);
  EXPECT_EQ(s.load_last(">")->seq, 4u);
  EXPECT_EQ(s.load_last("kv.c").code(), base::errc::not_found);
  auto c = s.subject_counts("kv.*");
  EXPECT_EQ(c.size(), 2u);
  EXPECT_EQ(c["kv.a"], 2u);
  EXPECT_EQ(c["kv.b"], 1u);
  EXPECT_EQ(s.subject_counts("").size(), 3u);
  EXPECT_EQ(s.num_subjects(), 3u);
  EXPECT_EQ(s.subject_last_seq("kv.a"), 3u);
  EXPECT_EQ(s.subject_count("kv.a"), 2u);
  EXPECT_EQ(s.subject_last_seq("kv.zz"), 0u);
  EXPECT_EQ(s.subject_counts("kv.b").size(), 1u);
  ASSERT_TRUE(s.remove(3).ok());
  EXPECT_EQ(s.load_last("kv.a")->seq, 1u);
  EXPECT_EQ(s.subject_last_seq("kv.a"), 1u);
}

TYPED_TEST(store_test, remove_and_deleted_list) {
  auto& s = *this->s;
  for (int i = 0; i < 5; ++i) this->put("s");
  EXPECT_TRUE(s.remove(3).ok());
  EXPECT_EQ(s.remove(3).code(), base::errc::not_found);
  EXPECT_TRUE(s.remove(1, true).ok());
  EXPECT_TRUE(s.remove(5).ok());
  auto st = s.state(true);
  EXPECT_EQ(st.msgs, 2u);
  EXPECT_EQ(st.first_seq, 2u);
  EXPECT_EQ(st.last_seq, 5u);
  EXPECT_EQ(st.num_deleted, 2u);
  EXPECT_EQ(st.deleted, (std::vector<std::uint64_t>{3, 5}));
  EXPECT_EQ(s.remove(99).code(), base::errc::not_found);
}

TYPED_TEST(store_test, purge_variants) {
  auto& s = *this->s;
  for (int i = 0; i < 12; ++i) this->put(i % 3 == 0 ? "orders.shipped" : "orders.created");
  EXPECT_EQ(*s.purge({"orders.shipped", 0, 0}), 4u);
  EXPECT_EQ(*s.purge({"", 0, 3}), 5u);
  auto st = s.state();
  EXPECT_EQ(st.msgs, 3u);
  EXPECT_EQ(st.first_seq, 9u);
  EXPECT_EQ(*s.purge({"", 12, 0}), 2u);
  EXPECT_EQ(*s.purge({"", 1, 0}), 0u);
  EXPECT_EQ(s.purge({"", 1, 1}).code(), base::errc::invalid_argument);
  EXPECT_EQ(*s.purge({}), 1u);
  st = s.state();
  EXPECT_EQ(st.msgs, 0u);
  EXPECT_EQ(st.first_seq, 13u);
  EXPECT_EQ(st.last_seq, 12u);
  EXPECT_EQ(this->put("x"), 13u);
  EXPECT_EQ(*s.purge({}), 1u);
  EXPECT_EQ(s.state().first_seq, 14u);
  // Purge past the end moves the sequence: the next message gets N.
  EXPECT_EQ(*s.purge({"", 100, 0}), 0u);
  st = s.state();
  EXPECT_EQ(st.first_seq, 100u);
  EXPECT_EQ(st.last_seq, 99u);
  EXPECT_EQ(this->put("y"), 100u);
}

TYPED_TEST(store_test, purge_filter_with_seq_and_keep) {
  auto& s = *this->s;
  for (int i = 0; i < 10; ++i) this->put(i % 2 ? "a.1" : "b.1");  // a: 2,4,6,8,10
  EXPECT_EQ(*s.purge({"a.*", 6, 0}), 2u);                          // 2,4
  EXPECT_EQ(*s.purge({"a.1", 0, 1}), 2u);                          // 6,8
  EXPECT_EQ(s.subject_counts("a.1")["a.1"], 1u);
  EXPECT_EQ(s.load_next("a.1", 0)->seq, 10u);
  EXPECT_EQ(s.state().msgs, 6u);
}

TYPED_TEST(store_test, skip_sequences) {
  auto& s = *this->s;
  ASSERT_TRUE(s.skip(5).ok());
  EXPECT_EQ(s.state().first_seq, 6u);
  EXPECT_EQ(s.state().last_seq, 5u);
  EXPECT_EQ(this->put("a"), 6u);
  ASSERT_TRUE(s.skip(2).ok());
  EXPECT_EQ(this->put("a"), 9u);
  EXPECT_EQ(s.state().num_deleted, 2u);
}

TYPED_TEST(store_test, enforce_limits) {
  auto& s = *this->s;
  for (int i = 0; i < 10; ++i) this->put(i < 5 ? "a" : "b", "12345");
  stream_limits l;
  l.max_msgs_per_subject = 3;
  s.set_limits(l);
  std::vector<std::uint64_t> removed;
  EXPECT_EQ(s.enforce_limits(&removed), 4u);
  EXPECT_EQ(removed, (std::vector<std::uint64_t>{1, 2, 6, 7}));
  l.max_msgs = 4;
  s.set_limits(l);
  removed.clear();
  EXPECT_EQ(s.enforce_limits(&removed), 2u);
  EXPECT_EQ(removed, (std::vector<std::uint64_t>{3, 4}));
  l.max_bytes = std::int64_t(2 * msg_size(TypeParam::acct, 1, 0, 5));
  s.set_limits(l);
  EXPECT_EQ(s.enforce_limits(nullptr), 2u);
  EXPECT_EQ(s.state().first_seq, 9u);
  this->put("b", "12345");
  EXPECT_EQ(s.enforce_limits(nullptr), 1u);
  EXPECT_EQ(s.state().msgs, 2u);
}

// Subject delete markers: expire() asks about a subject's last expiring message only (max_age
// and TTL alike), leaves it when told to, and removes the rest.
TYPED_TEST(store_test, expire_spares_the_last_of_a_subject_when_asked) {
  auto& s = *this->s;
  this->put("a", "x", kT0);                 // 1: a has a later message that also expires
  this->put("b", "x", kT0);                 // 2: b's only message
  this->put("a", "x", kT0 + 1 * kSec);      // 3: a's last
  this->put("c", "x", kT0 + 1 * kSec, kSec);  // 4: c's only message, TTL 1 s
  this->put("d", "x", kT0 + 1 * kSec);      // 5: spare says no
  stream_limits l;
  l.max_age_ns = 5 * kSec;
  s.set_limits(l);
  std::vector<std::pair<std::uint64_t, std::string>> asked;
  auto spare = [&](std::uint64_t seq, std::string_view subj) {
    asked.emplace_back(seq, std::string(subj));
    return subj != "d";
  };
  std::vector<std::uint64_t> removed;
  EXPECT_EQ(s.expire(kT0 + 2 * kSec, &removed, spare), 0u);  // only 4's TTL is due
  EXPECT_EQ(asked, (std::vector<std::pair<std::uint64_t, std::string>>{{4, "c"}}));
  EXPECT_TRUE(s.load(4).ok());
  asked.clear();
  EXPECT_EQ(s.expire(kT0 + 6 * kSec, &removed, spare), 2u);
  EXPECT_EQ(removed, (std::vector<std::uint64_t>{1, 5}));
  // Sequence order, each once (4 is due by age and TTL both).
  EXPECT_EQ(asked, (std::vector<std::pair<std::uint64_t, std::string>>{{2, "b"}, {3, "a"}, {4, "c"}, {5, "d"}}));
  EXPECT_EQ(s.state().msgs, 3u);
  for (std::uint64_t q : {2, 3, 4}) EXPECT_TRUE(s.load(q).ok()) << q;
  // Without spare everything due goes.
  removed.clear();
  EXPECT_EQ(s.expire(kT0 + 6 * kSec, &removed), 3u);
  EXPECT_EQ(s.state().msgs, 0u);
}

TYPED_TEST(store_test, expire_age_and_ttl) {
  auto& s = *this->s;
  this->put("a", "x", kT0);
  this->put("a", "x", kT0 + 1 * kSec, ttl_never);
  this->put("a", "x", kT0 + 2 * kSec, 1 * kSec);
  this->put("a", "x", kT0 + 3 * kSec);
  stream_limits l;
  l.max_age_ns = 10 * kSec;
  s.set_limits(l);
  EXPECT_EQ(s.next_expiry(), kT0 + 3 * kSec);  // seq 3's TTL
  std::vector<std::uint64_t> removed;
  EXPECT_EQ(s.expire(kT0 + 3 * kSec, &removed), 1u);
  EXPECT_EQ(removed, (std::vector<std::uint64_t>{3}));
  EXPECT_EQ(s.next_expiry(), kT0 + 10 * kSec);
  removed.clear();
  EXPECT_EQ(s.expire(kT0 + 20 * kSec, &removed), 2u);
  EXPECT_EQ(removed, (std::vector<std::uint64_t>{1, 4}));
  EXPECT_EQ(s.state().msgs, 1u);  // the `never` message stays
  EXPECT_EQ(s.load(2)->ttl, ttl_never);
}

TYPED_TEST(store_test, seq_for_time) {
  auto& s = *this->s;
  for (int i = 0; i < 5; ++i) this->put("t", "x", kT0 + i * kSec);
  EXPECT_EQ(*s.seq_for_time(kT0 + 2 * kSec), 3u);
  EXPECT_EQ(*s.seq_for_time(0), 1u);
  EXPECT_EQ(s.seq_for_time(kT0 + 9 * kSec).code(), base::errc::not_found);
}

TYPED_TEST(store_test, durable_callback_in_order) {
  auto& s = *this->s;
  std::vector<std::uint64_t> seen;
  s.on_durable([&](std::uint64_t d) { seen.push_back(d); });
  for (int i = 0; i < 100; ++i) {
    this->put("d", std::string(300, 'p'));
    if (i % 7 == 0) s.poll();
  }
  ASSERT_TRUE(s.flush().ok());
  EXPECT_EQ(s.durable_seq(), 100u);
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.back(), 100u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
}

TYPED_TEST(store_test, many_messages_across_blocks) {
  auto& s = *this->s;
  std::string big(5000, 'b');
  for (int i = 0; i < 200; ++i) {
    big[0] = char('a' + i % 26);
    this->put(i % 2 ? "odd" : "even", big);
    if (i % 10 == 0) s.poll();
  }
  ASSERT_TRUE(s.flush().ok());
  for (std::uint64_t q = 1; q <= 200; ++q) {
    auto m = s.load(q);
    ASSERT_TRUE(m.ok()) << q;
    EXPECT_EQ(m->payload[0], char('a' + (q - 1) % 26));
    EXPECT_EQ(m->payload.size(), 5000u);
  }
  EXPECT_EQ(s.load_last("even")->seq, 199u);
}

// The memory store packs messages into chunks: churn on a few subjects (one message kept per
// subject, like a KV bucket) must not keep dead chunks alive, and the records moved out of a
// mostly dead chunk must read back intact.
TEST(memory_store_chunks, churn_keeps_memory_near_what_is_live) {
  memory_store s;
  stream_limits l;
  l.max_msgs_per_subject = 1;
  s.set_limits(l);
  std::uint64_t live_bytes = 0;
  for (int i = 0; i < 200'000; ++i) {
    const std::string subj = "kv." + std::to_string((i * 7919) % 300);
    ASSERT_TRUE(s.append(subj, "", std::string(40 + i % 50, char('a' + i % 26)) + std::to_string(i), 1).ok());
    s.enforce_limits();
  }
  EXPECT_EQ(s.state().msgs, 300u);
  for (std::uint64_t seq = s.first_seq(); seq <= s.last_seq(); ++seq) {
    auto m = s.load(seq);
    if (!m.ok()) continue;
    const int i = std::stoi(m->payload.substr(m->payload.find_first_of("0123456789")));
    EXPECT_EQ(m->seq, std::uint64_t(i) + 1);
    EXPECT_EQ(m->payload.size(), std::size_t(40 + i % 50) + std::to_string(i).size());
    EXPECT_EQ(m->payload[0], char('a' + i % 26));
    live_bytes += m->payload.size() + 12;
  }
  // Each chunk but the current one is at least a quarter live (or small).
  EXPECT_LT(s.chunk_bytes(), 4 * live_bytes + 2 * (256u << 10)) << "live " << live_bytes;
  // Everything removed: nothing but (at most) the current chunk stays.
  purge_request all;
  ASSERT_TRUE(s.purge(all).ok());
  EXPECT_LE(s.chunk_bytes(), 256u << 10);
}

TEST(memory_store_chunks, big_messages_get_a_chunk_of_their_own_and_free_it) {
  memory_store s;
  ASSERT_TRUE(s.append("a", "", "small", 1).ok());
  const std::uint64_t before = s.chunk_bytes();
  const std::string big(1 << 20, 'B');
  ASSERT_TRUE(s.append("b", "NATS/1.0\r\n\r\n", big, 1).ok());
  EXPECT_GE(s.chunk_bytes(), before + big.size());
  ASSERT_TRUE(s.append("a", "", "after", 1).ok());
  EXPECT_EQ(s.load(2)->payload, big);
  EXPECT_EQ(s.load(3)->payload, "after");
  ASSERT_TRUE(s.remove(2).ok());
  EXPECT_EQ(s.chunk_bytes(), before);
  EXPECT_EQ(s.load(1)->payload, "small");
}

TEST(state_codec, round_trip_and_corruption) {
  stream_state st;
  st.msgs = 3;
  st.bytes = 404;
  st.first_seq = 2;
  st.last_seq = 7;
  st.first_ts = 5;
  st.last_ts = 9;
  st.deleted = {3, 4};
  st.lost = {6};
  std::string enc = encode_state(st);
  auto dec = decode_state(enc);
  ASSERT_TRUE(dec.ok());
  EXPECT_EQ(*dec, st);
  enc[10] ^= 1;
  EXPECT_EQ(decode_state(enc).code(), base::errc::corrupt);
  EXPECT_EQ(decode_state("short").code(), base::errc::corrupt);
}

}  // namespace
}  // namespace storage
