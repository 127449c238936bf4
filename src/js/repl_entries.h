#pragma once
// The entries replicated groups agree on (issue 11): what the meta group, a stream's group
// and a consumer's group put in their Raft logs. Pure encode/decode; the log's records are
// already checksummed, so an entry carries no checksum of its own.
//
//   u8 format version (1) | u8 op | fields
// Unsigned integers are LEB128 varints, signed ones zigzag varints, strings and byte blocks a
// varint length then the bytes. Decoding is strict: an unknown version or op, a length past
// the end, an over-long varint or trailing bytes reject the whole entry (nullopt); a replica
// that cannot decode a committed entry stops rather than guessing.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace js::repl_entries {

constexpr std::uint8_t kFormatVersion = 1;

enum class op : std::uint8_t {
  // meta group
  stream_assign = 1,
  stream_update = 2,
  stream_remove = 3,
  consumer_assign = 4,
  consumer_remove = 5,
  consumer_update = 6,
  server_remove = 7,
  r1_streams = 8,
  // a stream's group
  msg = 16,
  purge = 17,
  msg_delete = 18,
  batch = 19,
  leader_start = 20,
  expire = 21,
  seed_done = 22,
  stream_config = 23,
  no_interest = 24,
  // a consumer's group
  consumer_delivered = 32,
  consumer_acked = 33,
  consumer_leader_start = 34,
  consumer_reset = 35,
  consumer_updates = 36,
  // Raft snapshots of a group's state (not entries: the data of a snapshot)
  stream_snapshot = 48,
  consumer_snapshot = 49,
};

// --- meta group
// A consumer's state carried into a new group (a scale of its stream): every replica starts
// from it, then applies the group's entries on top.
struct consumer_seed {
  std::uint64_t delivered_consumer = 0, delivered_stream = 0;
  std::uint64_t floor_consumer = 0, floor_stream = 0;
  struct pending {
    std::uint64_t sseq = 0, dseq = 0;
    std::int64_t ts = 0;
    bool operator==(const pending&) const = default;
  };
  std::vector<pending> pending_acks;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> redelivered;  // sseq -> redeliveries
  bool operator==(const consumer_seed&) const = default;
};
struct consumer_assign {
  std::string account;
  std::string stream;
  std::string name;
  std::string config_json;
  std::vector<std::string> peers;
  std::int64_t created_ns = 0;
  std::uint64_t group_id = 0;
  // Where its replicas start (a scale of its stream); encoded only when set.
  std::optional<consumer_seed> state;
  bool operator==(const consumer_assign&) const = default;
};
struct stream_assign {
  std::string account;
  std::string name;
  std::string config_json;         // the normalised StreamConfig, as the API echoes it
  std::vector<std::string> peers;  // server names; the first is the preferred leader
  std::int64_t created_ns = 0;
  std::uint64_t group_id = 0;      // the stream's Raft group
  // A new group that starts with a copy of this server's messages (a change of num_replicas):
  // only it can seed the group, which takes no writes before its seed_done is applied.
  // Encoded only when set (an optional trailing field).
  std::string seed_from;
  // With a scale: the stream's consumers in their new groups (each encoded as a
  // consumer_assign entry of its own); they replace the stream's consumers atomically.
  std::vector<consumer_assign> consumers;
  bool operator==(const stream_assign&) const = default;
};
struct stream_update : stream_assign {
  bool operator==(const stream_update&) const = default;
};
struct stream_remove {
  std::string account;
  std::string name;
  bool operator==(const stream_remove&) const = default;
};
struct consumer_remove {
  std::string account;
  std::string stream;
  std::string name;
  bool operator==(const consumer_remove&) const = default;
};
// A consumer's new config (an update, PAUSE's pause_until): its group, peers and state stay.
struct consumer_update {
  std::string account;
  std::string stream;
  std::string name;
  std::string config_json;
  bool operator==(const consumer_update&) const = default;
};
// $JS.API.SERVER.REMOVE: the server leaves the meta group for good (no one adds it back) and
// the meta leader moves the replicas it held.
struct server_remove {
  std::string name;
  bool operator==(const server_remove&) const = default;
};
// The streams of one replica that a server holds itself (its hub's R1 streams): every server
// then knows where to send a request about them. The whole set, replacing the last one; with
// the server's tags, so the meta leader places by them.
struct r1_stream {
  std::string name;
  std::vector<std::string> subjects;
  bool operator==(const r1_stream&) const = default;
};
struct r1_streams {
  std::string server;
  std::vector<r1_stream> streams;  // in name order
  // The server's server_tags (placement by tags); encoded only when there are any.
  std::vector<std::string> tags;
  bool operator==(const r1_streams&) const = default;
};
using meta_op = std::variant<stream_assign, stream_update, stream_remove, consumer_assign,
                             consumer_remove, consumer_update, server_remove, r1_streams>;

// --- a stream's group. The leader assigns sequence and timestamp; every replica stores the
// message under exactly these.
struct msg {
  std::uint64_t seq = 0;
  std::int64_t ts = 0;  // unix ns
  std::int64_t ttl = 0;
  std::string subject;
  std::string headers;
  std::string payload;
  bool operator==(const msg&) const = default;
};
struct purge {
  std::string filter;
  std::uint64_t seq = 0;
  std::uint64_t keep = 0;
  bool operator==(const purge&) const = default;
};
struct msg_delete {
  std::uint64_t seq = 0;
  bool erase = false;
  bool operator==(const msg_delete&) const = default;
};
// An atomic batch is one entry: every replica applies all of it or none.
struct batch {
  std::vector<msg> msgs;
  bool operator==(const batch&) const = default;
};
// Proposed by a new leader before it takes publishes: once it is applied, everything
// committed before it is applied too, so sequences resume from the applied state.
struct leader_start {
  std::uint64_t term = 0;
  std::string leader;
  bool operator==(const leader_start&) const = default;
};
// Proposed by the stream leader when something is due (max_age, per-message TTL): every
// replica removes what has expired at the leader's time `now`, so replicas with the same
// contents remove the same messages; no replica ever expires by its own clock.
struct expire {
  std::int64_t now = 0;  // unix ns
  bool operator==(const expire&) const = default;
};
// The seeding server's last entry of a seeded group (stream_assign::seed_from): the stream's
// messages came before it in batches (sequences kept, gaps skipped); the stream's last
// sequence is `last_seq` from here on, and its leader may take writes.
struct seed_done {
  std::uint64_t last_seq = 0;
  bool operator==(const seed_done&) const = default;
};
// A STREAM.UPDATE at this point of the stream's log: proposed by the leader once the meta
// entry that changed the config (its index `meta_index`) is applied there. Every replica
// takes the config here, so all trim at the same entry, and a later leader has it even if
// its own meta group lags (only a newer meta_index replaces the config).
struct config_change {
  std::uint64_t meta_index = 0;
  std::string config_json;
  bool operator==(const config_change&) const = default;
};
// A publish to an interest stream that no consumer matched: its sequence is used, nothing is
// stored (the leader decides, every replica skips the same sequence); its Msg-Id still counts
// for de-duplication.
struct no_interest {
  std::uint64_t seq = 0;
  std::int64_t ts = 0;
  std::string msg_id;
  bool operator==(const no_interest&) const = default;
};
using stream_op = std::variant<msg, purge, msg_delete, batch, leader_start, expire, seed_done, config_change,
                               no_interest>;

// --- a consumer's group: state deltas, applied in order.
struct consumer_delivered {
  std::uint64_t dseq = 0;
  std::uint64_t sseq = 0;
  std::uint64_t deliveries = 0;
  std::int64_t ts = 0;
  bool operator==(const consumer_delivered&) const = default;
};
struct consumer_acked {
  std::uint64_t sseq = 0;
  std::uint64_t dseq = 0;
  bool operator==(const consumer_acked&) const = default;
};
// As the stream's leader_start: a new consumer leader resumes from the applied state only
// once this entry is applied (everything committed before it is then applied too).
struct consumer_leader_start {
  std::uint64_t term = 0;
  std::string leader;
  bool operator==(const consumer_leader_start&) const = default;
};
// CONSUMER.RESET: delivery starts over after stream sequence `floor` (nothing pending, both
// consumer sequences from 0, the ack floor at `floor`).
struct consumer_reset {
  std::uint64_t floor = 0;
  bool operator==(const consumer_reset&) const = default;
};
// The deliveries and acks a leader made in one turn, in the order it made them: one entry
// instead of one per message each (an entry per delivery and per ack was most of a
// replicated fetch's cost: a journal record, a frame and an apply on every replica).
struct consumer_updates {
  using update = std::variant<consumer_delivered, consumer_acked>;
  std::vector<update> updates;
  bool operator==(const consumer_updates&) const = default;
};
using consumer_op = std::variant<consumer_delivered, consumer_acked, consumer_leader_start, consumer_reset,
                                 consumer_updates>;

// --- snapshots: a replica's whole replicated state at `applied_index` (log compaction)
struct stream_snapshot {
  std::uint64_t applied_index = 0;
  std::uint64_t config_index = 0;
  std::string config_json;
  bool seeded = true;
  std::string seed_origin;
  std::string last_msg_id;
  struct msg_id {
    std::string id;
    std::uint64_t seq = 0;
    std::int64_t ts = 0;
    bool operator==(const msg_id&) const = default;
  };
  std::vector<msg_id> dedup;  // the Nats-Msg-Id window, oldest first
  std::uint64_t first_seq = 0, last_seq = 0;  // the store's (gaps: sequences not in msgs)
  std::vector<msg> msgs;
  bool operator==(const stream_snapshot&) const = default;
};
struct consumer_snapshot {
  std::uint64_t applied_index = 0;
  bool was_reset = false;
  consumer_seed state;
  bool operator==(const consumer_snapshot&) const = default;
};
std::vector<std::uint8_t> encode(const stream_snapshot& s);
std::vector<std::uint8_t> encode(const consumer_snapshot& s);
std::optional<stream_snapshot> decode_stream_snapshot(std::span<const std::uint8_t> data);
std::optional<consumer_snapshot> decode_consumer_snapshot(std::span<const std::uint8_t> data);

std::vector<std::uint8_t> encode(const meta_op& o);
std::vector<std::uint8_t> encode(const stream_op& o);
std::vector<std::uint8_t> encode(const consumer_op& o);

std::optional<meta_op> decode_meta(std::span<const std::uint8_t> data);
std::optional<stream_op> decode_stream(std::span<const std::uint8_t> data);
std::optional<consumer_op> decode_consumer(std::span<const std::uint8_t> data);

}  // namespace js::repl_entries
