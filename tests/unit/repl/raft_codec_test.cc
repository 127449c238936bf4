#include "src/repl/raft_codec.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "src/repl/memory_log_store.h"

namespace {

using namespace repl;

entry command(std::uint64_t term, const std::string& s) {
  return {term, entry_type::command, {s.begin(), s.end()}};
}

TEST(raft_codec, append_entries_round_trip_copies_entries_from_the_log) {
  memory_log_store log;
  log.bootstrap({1, 0}, {1, entry_type::change, {9, 9}});
  const entry more[] = {command(2, "alpha"), command(2, ""), command(3, "gamma")};
  log.append(2, more);

  raft_message m{};
  m.type = RAFT_APPEND_ENTRIES;
  m.server_id = 3;  // destination
  m.append_entries = {1, 3, 1, 1, 2, nullptr, 3};
  std::vector<std::uint8_t> frame;
  ASSERT_TRUE(encode_frame(frame, {77, 1, 0, 5, 6}, m, log));

  auto route = peek_route(frame);
  ASSERT_TRUE(route);
  EXPECT_EQ(route->group, 77u);
  EXPECT_EQ(route->from, 1u);
  EXPECT_EQ(route->to, 3u);  // from the message
  EXPECT_EQ(route->incarnation, 5u);
  EXPECT_EQ(route->seq, 6u);

  auto d = decode_frame(frame);
  ASSERT_TRUE(d);
  const auto& a = d->msg.append_entries;
  EXPECT_EQ(d->msg.type, RAFT_APPEND_ENTRIES);
  EXPECT_EQ(d->msg.server_id, 1u);  // raft wants the sender here
  EXPECT_EQ(a.term, 3u);
  EXPECT_EQ(a.prev_log_index, 1u);
  EXPECT_EQ(a.prev_log_term, 1u);
  EXPECT_EQ(a.leader_commit, 2u);
  ASSERT_EQ(a.n_entries, 3u);
  for (unsigned i = 0; i < 3; ++i) {
    EXPECT_EQ(a.entries[i].term, more[i].term);
    EXPECT_EQ(a.entries[i].type, RAFT_COMMAND);
    ASSERT_EQ(a.entries[i].buf.len, more[i].data.size());
    if (!more[i].data.empty()) {  // an empty entry's data pointer may be null (UBSan)
      EXPECT_EQ(0, std::memcmp(a.entries[i].buf.base, more[i].data.data(), more[i].data.size()));
    }
    EXPECT_EQ(a.entries[i].batch, a.entries[0].batch);  // one batch, as raft frees it
  }
  drop_decoded(d->msg);
}

TEST(raft_codec, append_entries_for_missing_entries_is_not_encoded) {
  memory_log_store log;
  log.bootstrap({1, 0}, {1, entry_type::change, {1}});
  raft_message m{};
  m.type = RAFT_APPEND_ENTRIES;
  m.server_id = 2;
  m.append_entries = {1, 2, 1, 1, 1, nullptr, 4};  // entries 2..5 do not exist
  std::vector<std::uint8_t> frame{1, 2, 3};
  EXPECT_FALSE(encode_frame(frame, {1, 1, 0, 1, 1}, m, log));
  EXPECT_EQ(frame.size(), 3u);  // nothing half-written left behind
}

TEST(raft_codec, vote_and_result_messages_round_trip) {
  memory_log_store log;
  raft_message v{};
  v.type = RAFT_REQUEST_VOTE;
  v.server_id = 2;
  v.request_vote = {2, 8, 1, 40, 7, true, true};
  raft_message r{};
  r.type = RAFT_APPEND_ENTRIES_RESULT;
  r.server_id = 1;
  r.append_entries_result = {1, 8, 12, 11, 1, 300};
  std::vector<std::uint8_t> fv, fr;
  ASSERT_TRUE(encode_frame(fv, {5, 1, 0, 1, 1}, v, log));
  ASSERT_TRUE(encode_frame(fr, {5, 2, 0, 1, 2}, r, log));
  auto dv = decode_frame(fv);
  auto dr = decode_frame(fr);
  ASSERT_TRUE(dv && dr);
  EXPECT_EQ(dv->msg.request_vote.term, 8u);
  EXPECT_EQ(dv->msg.request_vote.candidate_id, 1u);
  EXPECT_EQ(dv->msg.request_vote.last_log_index, 40u);
  EXPECT_EQ(dv->msg.request_vote.last_log_term, 7u);
  EXPECT_TRUE(dv->msg.request_vote.pre_vote);
  EXPECT_TRUE(dv->msg.request_vote.disrupt_leader);
  EXPECT_EQ(dr->msg.append_entries_result.rejected, 12u);
  EXPECT_EQ(dr->msg.append_entries_result.last_log_index, 11u);
  EXPECT_EQ(dr->msg.append_entries_result.capacity, 300u);
}

TEST(raft_codec, every_truncation_and_trailing_garbage_is_rejected) {
  memory_log_store log;
  log.bootstrap({1, 0}, {1, entry_type::change, {1}});
  const entry more[] = {command(2, "payload")};
  log.append(2, more);
  raft_message m{};
  m.type = RAFT_APPEND_ENTRIES;
  m.server_id = 2;
  m.append_entries = {1, 2, 1, 1, 1, nullptr, 1};
  std::vector<std::uint8_t> frame;
  ASSERT_TRUE(encode_frame(frame, {1, 1, 0, 1, 1}, m, log));
  for (std::size_t len = 0; len < frame.size(); ++len)
    EXPECT_FALSE(decode_frame({frame.data(), len})) << "length " << len;
  auto longer = frame;
  longer.push_back(0);
  EXPECT_FALSE(decode_frame(longer));
}

TEST(raft_codec, lying_counts_and_bad_fields_are_rejected) {
  memory_log_store log;
  raft_message m{};
  m.type = RAFT_APPEND_ENTRIES;
  m.server_id = 2;
  m.append_entries = {1, 2, 0, 0, 0, nullptr, 0};
  std::vector<std::uint8_t> frame;
  ASSERT_TRUE(encode_frame(frame, {1, 1, 0, 1, 1}, m, log));
  ASSERT_TRUE(decode_frame(frame));
  auto huge = frame;  // the entry count is the last 4 bytes
  huge[huge.size() - 1] = 0x7f;
  EXPECT_FALSE(decode_frame(huge));
  auto bad_prev = frame;  // prev_log_index 5 with prev_log_term 0: raft would assert
  bad_prev[42 + 1 + 8] = 5;
  EXPECT_FALSE(decode_frame(bad_prev));
  auto bad_version = frame;
  bad_version[0] = 9;
  EXPECT_FALSE(decode_frame(bad_version));
  auto bad_type = frame;
  bad_type[41] = 99;
  EXPECT_FALSE(decode_frame(bad_type));
}

}  // namespace

namespace {

TEST(raft_codec, install_snapshot_travels_in_chunks_with_the_stored_configuration) {
  repl::memory_log_store log;
  repl::stored_snapshot snap;
  snap.meta = {40, 3, 7, {1, 2, 3}};
  std::vector<std::uint8_t> data(repl::kSnapshotChunk * 2 + 100);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = std::uint8_t(i * 7);
  snap.data = std::make_shared<const std::vector<std::uint8_t>>(data);
  // A configuration raft can decode.
  raft_configuration conf;
  raft_configuration_init(&conf);
  ASSERT_EQ(raft_configuration_add(&conf, 1, "1", RAFT_VOTER), 0);
  raft_buffer buf{};
  ASSERT_EQ(raft_configuration_encode(&conf, &buf), 0);
  raft_configuration_close(&conf);
  snap.meta.conf.assign(static_cast<std::uint8_t*>(buf.base), static_cast<std::uint8_t*>(buf.base) + buf.len);
  raft_free(buf.base);
  log.save_snapshot(snap, 41);

  raft_message m{};
  m.type = RAFT_INSTALL_SNAPSHOT;
  m.server_id = 2;
  m.install_snapshot.version = 1;
  m.install_snapshot.term = 5;
  m.install_snapshot.last_index = 40;
  std::vector<std::vector<std::uint8_t>> frames;
  ASSERT_TRUE(repl::encode_snapshot_frames(frames, {9, 1, 0, 4, 10}, m, log));
  ASSERT_EQ(frames.size(), 3u);  // two chunks, then the message with the rest
  std::vector<std::uint8_t> joined;
  for (std::size_t i = 0; i < 2; ++i) {
    auto c = repl::decode_frame(frames[i]);
    ASSERT_TRUE(c);
    EXPECT_TRUE(c->is_chunk);
    EXPECT_EQ(c->route.seq, 10 + i);
    EXPECT_EQ(c->chunk_offset, joined.size());
    joined.insert(joined.end(), c->chunk.begin(), c->chunk.end());
  }
  auto d = repl::decode_frame(frames[2]);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->route.seq, 12u);
  EXPECT_EQ(d->msg.type, RAFT_INSTALL_SNAPSHOT);
  EXPECT_EQ(d->snapshot_offset, joined.size());
  const auto& is = d->msg.install_snapshot;
  EXPECT_EQ(is.last_index, 40u);
  EXPECT_EQ(is.last_term, 3u);
  EXPECT_EQ(is.conf_index, 7u);
  ASSERT_EQ(is.conf.n, 1u);
  EXPECT_EQ(is.conf.servers[0].id, 1u);
  const auto* p = static_cast<const std::uint8_t*>(is.data.base);
  joined.insert(joined.end(), p, p + is.data.len);
  EXPECT_EQ(joined, data);
  repl::drop_decoded(d->msg);
  // Another index than the stored snapshot's: not encoded.
  m.install_snapshot.last_index = 39;
  frames.clear();
  EXPECT_FALSE(repl::encode_snapshot_frames(frames, {9, 1, 0, 4, 10}, m, log));
}

}  // namespace
