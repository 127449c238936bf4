#pragma once
// The journal record format of a Raft log store: what memory_log_store keeps as bytes and
// the O_DIRECT store will write. A record is
//   u32 crc32c (of everything after it, record_crc) | u32 body length | u8 kind | body
// little-endian. Kinds: snapshot (see append_snapshot_record), hard_state (u64 term, u64 voted_for, u64 incarnation) and entries (u64 first_index,
// u32 count, then per entry u64 term, u8 type, u32 length, data). Replaying entries at
// first_index drops everything from first_index on first (Raft's log truncation).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "src/repl/log_store.h"

namespace repl {

// Record and snapshot checksums: CRC-32C (the CPU's crc32 instruction, base/crc32c.h).
// Journals and snapshot files written before 2026-12-07 carry the table-driven CRC-32 (IEEE)
// instead; reading accepts either, so an upgraded server recovers what an older one wrote.
std::uint32_t record_crc(std::span<const std::uint8_t> bytes);
bool record_crc_matches(std::span<const std::uint8_t> bytes, std::uint32_t crc);
std::uint32_t legacy_crc32(std::span<const std::uint8_t> bytes);  // CRC-32 (IEEE), for reading

void append_hard_state_record(std::vector<std::uint8_t>& out, const hard_state& hs);
void append_entries_record(std::vector<std::uint8_t>& out, std::uint64_t first_index,
                           std::span<const entry> entries);
// kind snapshot: u64 index, u64 term, u64 conf_index, u64 keep_from, u32 conf length, conf,
// u64 data length, data. Replaying it applies log_store::save_snapshot's rule.
void append_snapshot_record(std::vector<std::uint8_t>& out, const stored_snapshot& s,
                            std::uint64_t keep_from);
// kind snapshot_file: the same, with the data in a file (stored_snapshot::file, size, crc)
// instead of the record: u64 index, u64 term, u64 conf_index, u64 keep_from, u32 conf length,
// conf, u64 size, u32 crc32c, u16 name length, name. Replay leaves the data to be read (null).
void append_snapshot_file_record(std::vector<std::uint8_t>& out, const stored_snapshot& s,
                                 std::uint64_t keep_from);
// save_snapshot's effect on a log view (shared by the stores and the replay).
void apply_snapshot(loaded_log& log, const stored_snapshot& s, std::uint64_t keep_from);

// Replays records from `bytes` into `log` (which holds the state before them). Returns the
// length of the valid prefix: parsing stops at the first short, torn or malformed record.
std::size_t replay_records(std::span<const std::uint8_t> bytes, loaded_log& log);

}  // namespace repl
