#pragma once
// Snapshot data files next to the replication journal (disk_log_store): the journal holds a
// small record naming the file, so a large stream's snapshot is never one huge journal
// write, and a journal rewrite copies no snapshot data. <dir>/<group>-<index>.snap, 16 hex
// digits each; written to a temporary name, fdatasync'd, renamed, directory synced.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "src/base/result.h"

namespace repl {

std::string snapshot_file_name(std::uint64_t group, std::uint64_t index);
std::uint32_t snapshot_crc(std::span<const std::uint8_t> data);
base::status write_snapshot_file(const std::string& dir, const std::string& name,
                                 std::span<const std::uint8_t> data);
// The file's data if it has `size` bytes with checksum `crc` (snapshot_crc, or the older CRC-32).
base::result<std::shared_ptr<const std::vector<std::uint8_t>>> read_snapshot_file(
    const std::string& dir, const std::string& name, std::uint64_t size, std::uint32_t crc);
void remove_snapshot_file(const std::string& dir, const std::string& name);
// Every *.snap file in dir, and every *.snap.tmp (a write a crash cut short).
std::vector<std::string> list_snapshot_files(const std::string& dir);

}  // namespace repl
