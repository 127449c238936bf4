#pragma once
// Wire frames of the replication connections: one Raft message, tagged with its group.
//   u8 frame version (1) | u64 group | u64 from | u64 to | u64 sender incarnation |
//   u64 sequence | u8 message type | fields
// little-endian; each message carries its raft.h struct version byte first so a newer peer's
// fields are interpreted as raft expects. (incarnation, sequence) increases with every frame
// from one group member to another: the receiver drops a frame that is not newer than the
// last it took, so late (reordered) and duplicated frames become lost ones. cowsql raft
// assumes each peer's messages arrive in order, as over its own TCP transport: the simulation
// showed a late AppendEntries rejection leaving the leader's progress for that follower with
// next_index == match_index, after which it only sent heartbeats to it, forever. AppendEntries entries are copied from the sender's
// log_store (raft_step emits only their count). InstallSnapshot's configuration and data come
// from the sender's stored snapshot too; data over kSnapshotChunk goes ahead in chunk frames
//   ... | u8 kSnapshotChunkType | u64 last_index | u64 offset | u32 length | bytes
// and the InstallSnapshot frame carries the last piece with its offset; the receiving
// raft_group joins them (a missing piece drops the install, which raft sends again).
#include "src/repl/raft_c.h"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "src/repl/log_store.h"

namespace repl {

struct frame_route {
  std::uint64_t group = 0;
  std::uint64_t from = 0;
  std::uint64_t to = 0;
  std::uint64_t incarnation = 0;
  std::uint64_t seq = 0;
};

inline constexpr std::uint8_t kSnapshotChunkType = 200;
inline constexpr std::size_t kSnapshotChunk = 8u << 20;

// Reads only the header: what a server needs to hand a frame to its group.
std::optional<frame_route> peek_route(std::span<const std::uint8_t> frame);

// Encodes `m` (as raft_step emitted it: server_id is the destination). False when the
// message type is not supported or an entry it needs is missing from `log`.
// route.to is taken from m.server_id.
bool encode_frame(std::vector<std::uint8_t>& out, frame_route route, const raft_message& m,
                  const log_store& log);

// InstallSnapshot (m as raft_step emitted it) as frames: chunks first, then the message,
// route.seq counting up from the given one. False when the store's snapshot is not the one
// at m.install_snapshot.last_index.
bool encode_snapshot_frames(std::vector<std::vector<std::uint8_t>>& frames, frame_route route,
                            const raft_message& m, const log_store& log);

// A decoded frame. For AppendEntries with entries, entries[] and the one data batch they
// point into are raft_malloc'd: raft_step takes the batch (frees it, or hands it back in
// raft_update.entries), the caller frees the entries[] array.
// InstallSnapshot: conf is decoded and data raft_malloc'd (raft takes both); data holds the
// bytes from snapshot_offset on. A chunk frame has no message: is_chunk, and its piece.
struct decoded_frame {
  frame_route route;
  raft_message msg{};
  std::uint64_t snapshot_offset = 0;
  bool is_chunk = false;
  std::uint64_t chunk_index = 0;   // the snapshot's last_index
  std::uint64_t chunk_offset = 0;
  std::vector<std::uint8_t> chunk;
};
std::optional<decoded_frame> decode_frame(std::span<const std::uint8_t> frame);

// Frees what decode_frame allocated for a message that never reached raft_step.
void drop_decoded(raft_message& m);

}  // namespace repl
