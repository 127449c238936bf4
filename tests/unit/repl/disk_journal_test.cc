// The shared replication journal and its per-group log stores, on real files: group commit
// (one write for every group's records of a turn), recovery, torn tails and bit flips.
#include "src/repl/disk_journal.h"

#include <gtest/gtest.h>

#include <string>

#include "io/fault_file.h"
#include "io/sync_backend.h"
#include "src/repl/disk_log_store.h"
#include "src/repl/raft_group.h"
#include "tests/unit/storage/temp_dir.h"

namespace {

using namespace repl;

entry command(std::uint64_t term, const std::string& s) {
  return {term, entry_type::command, {s.begin(), s.end()}};
}

std::unique_ptr<disk_journal> open_journal(const std::string& path, io::fault_backend** fault = nullptr,
                                           bool sync_writes = true) {
  auto inner = std::make_unique<io::sync_backend>(false);
  std::unique_ptr<io::backend> b;
  if (fault) {
    auto f = std::make_unique<io::fault_backend>(std::move(inner));
    *fault = f.get();
    b = std::move(f);
  } else {
    b = std::move(inner);
  }
  auto j = disk_journal::open(path, std::move(b), sync_writes);
  EXPECT_TRUE(j.ok());
  return j.ok() ? std::move(*j) : nullptr;
}

void settle(disk_journal& j) {
  j.flush();
  while (!j.idle()) {
    j.poll();
    j.flush();
  }
}

TEST(disk_journal, one_write_covers_every_group_of_a_turn_and_recovers) {
  storage_test::temp_dir d;
  const std::string path = d.sub("journal");
  {
    io::fault_backend* fault = nullptr;
    auto j = open_journal(path, &fault);
    j->define_group({1, {"a", "b", "c"}});
    j->define_group({2, {"a", "b"}});
    disk_log_store s1(*j, 1, nullptr), s2(*j, 2, nullptr);
    const entry e1[] = {command(1, "one"), command(1, "two")};
    const entry e2[] = {command(3, "x")};
    const std::uint64_t w1 = s1.append(1, e1);
    const std::uint64_t w2 = s2.append(1, e2);
    EXPECT_LT(w1, w2);
    EXPECT_EQ(j->durable_seq(), 0u);
    const std::uint64_t before = fault->writes();
    j->flush();
    EXPECT_EQ(fault->writes(), before + 1);  // group commit
    EXPECT_TRUE(j->poll());
    EXPECT_EQ(j->durable_seq(), w2);
    ASSERT_NE(s1.entry_at(2), nullptr);
    EXPECT_EQ(*s1.entry_at(2), e1[1]);
  }
  auto j = open_journal(path);
  ASSERT_EQ(j->recovered().size(), 2u);
  const recovered_group& g1 = j->recovered().at(1);
  EXPECT_EQ(g1.def.members, (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_EQ(g1.log.entries.size(), 2u);
  EXPECT_EQ(g1.log.entries[1], command(1, "two"));
  EXPECT_EQ(j->recovered().at(2).log.entries.at(0), command(3, "x"));
  EXPECT_EQ(j->dropped_tail_bytes(), 0u);
}

// `write` durability: a write into the zeroed, synced space ahead of the end needs no device
// cache flush (that flush is most of a replicated publish's wait on this VM); only what grows
// the file is synced. `sync` keeps every write durable.
TEST(disk_journal, write_durability_syncs_only_writes_that_grow_the_file) {
  for (const bool sync_writes : {false, true}) {
    SCOPED_TRACE(sync_writes ? "sync" : "write");
    storage_test::temp_dir d;
    const std::string path = d.sub("journal");
    std::uint64_t tail_writes = 0, tail_durable = 0;
    {
      io::fault_backend* fault = nullptr;
      auto j = open_journal(path, &fault, sync_writes);
      j->define_group({4, {"a", "b", "c"}});
      disk_log_store s(*j, 4, nullptr);
      for (int turn = 0; turn < 60; ++turn) {
        if (turn == 20) {
          tail_writes = fault->writes();
          tail_durable = fault->durable_writes();
        }
        const entry e[] = {command(1, std::string(std::size_t(200 + turn), char('a' + turn % 26)))};
        s.append(std::uint64_t(turn) + 1, e);
        settle(*j);
        EXPECT_EQ(j->durable_seq(), j->last_seq());
      }
      tail_writes = fault->writes() - tail_writes;
      tail_durable = fault->durable_writes() - tail_durable;
      if (!sync_writes) {
        EXPECT_GE(j->safe_end(), std::uint64_t(4) << 20);  // zeroed ahead
      }
    }
    if (sync_writes) {
      EXPECT_EQ(tail_writes, 40u);  // one per turn, each synced
      EXPECT_EQ(tail_durable, 40u);
    } else {
      // One unsynced write per turn; the only synced ones are the next MiB of zeroes.
      EXPECT_EQ(tail_durable, tail_writes - 40u);
      EXPECT_LE(tail_durable, 2u);
    }
    for (int round = 0; round < 2; ++round) {  // recovers over the zeroes, and appends after it
      auto j = open_journal(path, nullptr, sync_writes);
      EXPECT_EQ(j->dropped_tail_bytes(), 0u);
      const auto& g = j->recovered().at(4);
      ASSERT_EQ(g.log.entries.size(), std::size_t(60 + round));
      EXPECT_EQ(g.log.entries[59], command(1, std::string(259, char('a' + 59 % 26))));
      if (round == 1) {
        EXPECT_EQ(g.log.entries[60], command(2, "after a restart"));
      }
      disk_log_store s(*j, 4, &g);
      const entry e[] = {command(2, "after a restart")};
      if (round == 0) s.append(61, e);
      settle(*j);
    }
  }
}

// A record bigger than the zeroed space ahead is written (synced) past it, never under a zero
// write in flight, and both it and later small ones recover.
TEST(disk_journal, write_durability_a_record_past_the_zeroed_space_is_synced_and_kept) {
  storage_test::temp_dir d;
  const std::string path = d.sub("journal");
  {
    io::fault_backend* fault = nullptr;
    auto j = open_journal(path, &fault, false);
    j->define_group({6, {"a"}});
    disk_log_store s(*j, 6, nullptr);
    const entry small[] = {command(1, "first")};
    s.append(1, small);
    settle(*j);
    const entry big[] = {command(1, std::string(std::size_t(6) << 20, 'B'))};
    s.append(2, big);
    j->flush();  // a zero write may be in flight: the big write waits for it, then goes synced
    const std::uint64_t durable_before = fault->durable_writes();
    settle(*j);
    EXPECT_GT(fault->durable_writes(), durable_before);
    const entry after[] = {command(1, "after")};
    s.append(3, after);
    settle(*j);
    EXPECT_EQ(j->durable_seq(), j->last_seq());
  }
  auto j = open_journal(path, nullptr, false);
  EXPECT_EQ(j->dropped_tail_bytes(), 0u);
  const auto& g = j->recovered().at(6);
  ASSERT_EQ(g.log.entries.size(), 3u);
  EXPECT_EQ(g.log.entries[1].data.size(), std::size_t(6) << 20);
  EXPECT_EQ(g.log.entries[2], command(1, "after"));
}

// io_uring + O_DIRECT with `write` durability: record writes and zero writes really are in
// flight together here (the sync backend completes each at once); every record recovers.
TEST(disk_journal, write_durability_on_the_automatic_backend_recovers_every_record) {
  storage_test::temp_dir d;
  const std::string path = d.sub("journal");
  auto size_of = [](int turn) { return turn % 50 == 7 ? std::size_t(1300) << 10 : std::size_t(100 + 37 * turn % 3000); };
  for (int round = 0; round < 2; ++round) {
    auto j = disk_journal::open(path, io::make_backend(d.path()), false);
    ASSERT_TRUE(j.ok());
    if (round == 0) (*j)->define_group({3, {"a", "b", "c"}});
    const recovered_group* rec = round == 0 ? nullptr : &(*j)->recovered().at(3);
    if (rec) {
      ASSERT_EQ(rec->log.entries.size(), 120u);
    }
    disk_log_store s(**j, 3, rec);
    for (int turn = 0; turn < 120; ++turn) {
      const int n = round * 120 + turn;
      const entry e[] = {command(1, std::string(size_of(n), char('a' + n % 26)))};
      s.append(std::uint64_t(n) + 1, e);
      (*j)->flush();
      (*j)->poll();
      if (turn % 10 == 9) settle(**j);
    }
    settle(**j);
    EXPECT_EQ((*j)->durable_seq(), (*j)->last_seq());
  }
  auto j = disk_journal::open(path, io::make_backend(d.path()), false);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ((*j)->dropped_tail_bytes(), 0u);
  const auto& g = (*j)->recovered().at(3);
  ASSERT_EQ(g.log.entries.size(), 240u);
  for (int n = 0; n < 240; ++n)
    ASSERT_EQ(g.log.entries[std::size_t(n)], command(1, std::string(size_of(n), char('a' + n % 26)))) << n;
}

TEST(disk_journal, the_automatic_backend_commits_and_recovers_alike) {
  storage_test::temp_dir d;
  const std::string path = d.sub("journal");
  {
    auto j = disk_journal::open(path, io::make_backend(d.path()));  // io_uring + O_DIRECT here
    ASSERT_TRUE(j.ok());
    (*j)->define_group({3, {"a", "b", "c"}});
    disk_log_store s(**j, 3, nullptr);
    for (int turn = 0; turn < 20; ++turn) {
      const entry e[] = {command(1, std::string(std::size_t(300 + turn), char('a' + turn)))};
      s.append(std::uint64_t(turn) + 1, e);
      settle(**j);
    }
    EXPECT_EQ((*j)->durable_seq(), (*j)->last_seq());
  }
  auto j = disk_journal::open(path, io::make_backend(d.path()));
  ASSERT_TRUE(j.ok());
  const auto& g = (*j)->recovered().at(3);
  ASSERT_EQ(g.log.entries.size(), 20u);
  EXPECT_EQ(g.log.entries[19], command(1, std::string(319, char('a' + 19))));
  EXPECT_EQ((*j)->dropped_tail_bytes(), 0u);
}

TEST(disk_journal, hard_state_is_durable_when_save_returns_and_takes_pending_entries_along) {
  storage_test::temp_dir d;
  const std::string path = d.sub("journal");
  {
    auto j = open_journal(path);
    j->define_group({5, {"a"}});
    disk_log_store s(*j, 5, nullptr);
    const entry e[] = {command(2, "p")};
    const std::uint64_t w = s.append(1, e);
    s.save_hard_state({2, 77, 3});
    EXPECT_EQ(j->durable_seq(), j->last_seq());
    EXPECT_GE(j->durable_seq(), w);
  }  // no flush: the process "dies" here
  auto j = open_journal(path);
  const auto& g = j->recovered().at(5);
  EXPECT_EQ(g.log.hard, (hard_state{2, 77, 3}));
  ASSERT_EQ(g.log.entries.size(), 1u);
}

TEST(disk_journal, a_torn_write_is_dropped_and_never_resurfaces_after_later_appends) {
  for (const bool sync_writes : {true, false}) {  // also over `write` mode's zeroed space
    SCOPED_TRACE(sync_writes ? "sync" : "write");
    storage_test::temp_dir d;
    const std::string path = d.sub("journal");
    {
      io::fault_backend* fault = nullptr;
      auto j = open_journal(path, &fault, sync_writes);
      j->define_group({1, {"a"}});
      disk_log_store s(*j, 1, nullptr);
      const entry first[] = {command(1, "durable")};
      s.append(1, first);
      settle(*j);
      // Three blocks of entries, of which only the first 5000 bytes reach the disk.
      std::vector<entry> big;
      for (int i = 0; i < 12; ++i) big.push_back(command(1, std::string(1000, char('a' + i))));
      s.append(2, big);
      fault->torn_next_write(5000);
      j->flush();
      j->poll();
      EXPECT_TRUE(j->failed());
    }
    {
      auto j = open_journal(path, nullptr, sync_writes);
      EXPECT_GT(j->dropped_tail_bytes(), 0u);
      const auto& g = j->recovered().at(1);
      ASSERT_EQ(g.log.entries.size(), 1u);
      EXPECT_EQ(g.log.entries[0], command(1, "durable"));
      disk_log_store s(*j, 1, &g);
      const entry next[] = {command(2, "after")};
      s.append(2, next);
      settle(*j);
    }
    auto j = open_journal(path, nullptr, sync_writes);
    EXPECT_EQ(j->dropped_tail_bytes(), 0u);
    const auto& g = j->recovered().at(1);
    ASSERT_EQ(g.log.entries.size(), 2u);
    EXPECT_EQ(g.log.entries[1], command(2, "after"));
  }
}

// A corrupt record ends recovery, but a later record of the same write may sit intact in a
// block past it. If a new write then ends exactly on that block's boundary, that stale record
// would follow it on the next recovery; recovery zeroes the blocks past the end for this.
TEST(disk_journal, a_stale_record_behind_a_corrupt_one_never_follows_later_appends) {
  storage_test::temp_dir d;
  const std::string path = d.sub("journal");
  constexpr std::size_t kDef = 28;     // the definition record of group 1 {"a"}
  constexpr std::size_t kEntry = 50;   // a one-entry record without its data
  const std::size_t fill = 2 * 4096 - kDef - kEntry;  // ends the record on the 2nd block's end
  {
    io::fault_backend* fault = nullptr;
    auto j = open_journal(path, &fault);
    j->define_group({1, {"a"}});
    settle(*j);
    ASSERT_EQ(j->recovered_bytes(), kDef);  // the end so far: the sizes below depend on it
    disk_log_store s(*j, 1, nullptr);
    const entry x[] = {command(1, std::string(fill, 'x'))};
    const entry y[] = {command(1, "stale")};
    s.append(1, x);
    s.append(2, y);  // starts exactly at 8192
    fault->flip_bit_next_write(kDef + 30, 1);  // inside x
    settle(*j);
  }
  {
    auto j = open_journal(path);
    ASSERT_EQ(j->recovered_bytes(), kDef);
    EXPECT_TRUE(j->recovered().at(1).log.entries.empty());
    disk_log_store s(*j, 1, &j->recovered().at(1));
    const entry z[] = {command(2, std::string(fill, 'z'))};  // ends at 8192 again
    s.append(1, z);
    settle(*j);
  }
  auto j = open_journal(path);
  const auto& g = j->recovered().at(1);
  ASSERT_EQ(g.log.entries.size(), 1u) << "the stale record came back";
  EXPECT_EQ(g.log.entries[0].term, 2u);
}

TEST(disk_journal, a_flipped_bit_ends_recovery_at_that_record) {
  storage_test::temp_dir d;
  const std::string path = d.sub("journal");
  std::uint64_t good = 0;
  {
    io::fault_backend* fault = nullptr;
    auto j = open_journal(path, &fault);
    j->define_group({1, {"a"}});
    disk_log_store s(*j, 1, nullptr);
    const entry a[] = {command(1, "a")};
    s.append(1, a);
    settle(*j);
    good = j->recovered_bytes();
    const entry b[] = {command(1, std::string(200, 'b'))};
    s.append(2, b);
    fault->flip_bit_next_write(std::size_t(good % 4096) + 100, 3);  // inside b's record
    settle(*j);
  }
  auto j = open_journal(path);
  ASSERT_EQ(j->recovered().at(1).log.entries.size(), 1u);
  EXPECT_GT(j->dropped_tail_bytes(), 0u);
}

TEST(disk_journal, a_raft_group_on_disk_restarts_with_its_log) {
  storage_test::temp_dir d;
  const std::string path = d.sub("journal");
  group_config cfg;
  cfg.group_id = 1;
  cfg.self = 9;
  cfg.voters = {9};
  std::uint64_t applied = 0;
  {
    auto j = open_journal(path);
    j->define_group({1, {"solo"}});
    disk_log_store s(*j, 1, nullptr);
    raft_group g(cfg, s);
    actions a;
    ASSERT_TRUE(g.start(0, a));
    std::uint64_t now = 0;
    for (int i = 0; i < 100 && g.current_role() != role::leader; ++i) {
      now = a.timer_at.value_or(now + 10);
      a.clear();
      g.on_timeout(now, a);
      settle(*j);
      a.clear();
      g.on_persisted(now, j->durable_seq(), a);
    }
    ASSERT_EQ(g.current_role(), role::leader);
    const std::string v = "hello";
    a.clear();
    ASSERT_EQ(g.propose(now, {reinterpret_cast<const std::uint8_t*>(v.data()), v.size()}, a).status,
              propose_status::ok);
    settle(*j);
    a.clear();
    g.on_persisted(now, j->durable_seq(), a);
    for (const auto& c : a.applies)
      if (c.value.type == entry_type::command && c.value.data == std::vector<std::uint8_t>(v.begin(), v.end()))
        applied = c.index;
    ASSERT_GT(applied, 0u);
  }
  auto j = open_journal(path);
  const auto& rec = j->recovered().at(1);
  disk_log_store s(*j, 1, &rec);
  raft_group g(cfg, s);
  actions a;
  ASSERT_TRUE(g.start(0, a));
  ASSERT_GE(s.last_index(), applied);
  EXPECT_EQ(std::string(s.entry_at(applied)->data.begin(), s.entry_at(applied)->data.end()), "hello");
  EXPECT_GT(s.load().hard.incarnation, 1u);  // bumped and saved at the restart
}

}  // namespace

namespace {

// A rewrite keeps what the groups need (snapshot, trailing and later entries, hard state),
// takes the records appended while the new file was written, forgets removed groups, and
// the journal goes on appending to the new file; a restart recovers exactly that.
// The rewrite check estimates a group's image instead of building it (building one as big as
// the journal each second stalled the replication thread): the estimate must follow appends,
// overwrites and snapshots, within a few hundred bytes of what write_image writes.
TEST(disk_journal, a_group_image_is_estimated_without_building_it) {
  storage_test::temp_dir d;
  auto j = open_journal(d.sub("journal"));
  j->define_group({1, {"a", "b", "c"}});
  disk_log_store s(*j, 1, nullptr);
  auto close_to_built = [&] {
    std::vector<std::uint8_t> image;
    s.write_image(image);
    const auto est = s.image_bytes();
    EXPECT_LE(est, image.size() + 512) << "built " << image.size();
    EXPECT_GE(est + 512, image.size()) << "estimated " << est;
  };
  s.save_hard_state({2, 1, 1});
  close_to_built();
  for (std::uint64_t i = 1; i <= 3000; ++i) {
    const entry e[] = {command(2, std::string(100 + i % 900, 'x'))};
    s.append(i, e);
  }
  close_to_built();  // more than one 4 MiB entries record
  const entry shorter[] = {command(3, "overwrites 2001..3000")};
  s.append(2001, shorter);
  EXPECT_EQ(s.last_index(), 2001u);
  close_to_built();
  stored_snapshot snap;
  snap.meta = {1500, 2, 1, {1, 2, 3}};
  snap.data = std::make_shared<const std::vector<std::uint8_t>>(std::vector<std::uint8_t>(4096, 1));
  s.save_snapshot(snap, 1401);
  close_to_built();
  settle(*j);
}

TEST(disk_journal, a_rewrite_keeps_the_live_records_and_appends_go_on) {
  for (bool sync_writes : {true, false}) {
    storage_test::temp_dir d;
    const std::string path = d.sub("journal");
    std::uint64_t rewritten_size = 0, before_size = 0;
    {
      auto j = open_journal(path, nullptr, sync_writes);
      j->define_group({1, {"a", "b", "c"}});
      j->define_group({2, {"a", "b"}});
      disk_log_store s1(*j, 1, nullptr), s2(*j, 2, nullptr);
      s1.save_hard_state({4, 2, 1});
      for (std::uint64_t i = 1; i <= 200; ++i) {
        const entry e[] = {command(4, std::string(1000, char('a' + i % 26)) + std::to_string(i))};
        s1.append(i, e);
        s2.append(i, e);
      }
      settle(*j);
      stored_snapshot snap;
      snap.meta = {190, 4, 1, {1, 2}};
      snap.data = std::make_shared<const std::vector<std::uint8_t>>(std::vector<std::uint8_t>(500, 7));
      s1.save_snapshot(snap, 181);  // keeps 181..200
      j->remove_group(2);
      before_size = j->size();
      std::vector<std::uint8_t> image;
      append_journal_record(image, 0, encode_group_definition({1, {"a", "b", "c"}}));
      s1.write_image(image);
      ASSERT_TRUE(j->begin_rewrite(std::move(image)));
      const entry late[] = {command(5, "written meanwhile")};
      s1.append(201, late);
      settle(*j);
      while (j->rewriting()) j->poll_rewrite();
      rewritten_size = j->size();
      EXPECT_LT(rewritten_size * 10, before_size);
      const entry after[] = {command(5, "after the switch")};
      s1.append(202, after);
      ASSERT_TRUE(j->sync().ok());
    }
    auto j = open_journal(path, nullptr, sync_writes);
    ASSERT_EQ(j->dropped_tail_bytes(), 0u);
    ASSERT_EQ(j->recovered().size(), 1u);
    const recovered_group& g = j->recovered().at(1);
    EXPECT_EQ(g.log.hard, (hard_state{4, 2, 1}));
    ASSERT_TRUE(g.log.snapshot);
    EXPECT_EQ(g.log.snapshot->meta.index, 190u);
    EXPECT_EQ(g.log.snapshot->data->size(), 500u);
    EXPECT_EQ(g.log.start_index, 181u);
    ASSERT_EQ(g.log.entries.size(), 22u);
    EXPECT_EQ(std::string(g.log.entries[20].data.begin(), g.log.entries[20].data.end()), "written meanwhile");
    EXPECT_EQ(std::string(g.log.entries[21].data.begin(), g.log.entries[21].data.end()), "after the switch");
  }
}

}  // namespace
