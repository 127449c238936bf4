#pragma once
// When the owner of a replicated stream or consumer snapshots its state (raft log compaction,
// cluster_replication::snapshot_taken): once the entries applied since its last snapshot
// outweigh both a floor and half the state's own size. The log kept in memory stays within
// that bound, and snapshot writes stay within a small multiple of the log they replace (a
// stream that only grows snapshots at sizes growing by half each time).
#include <algorithm>
#include <cstdint>
#include <cstdlib>

namespace js {

struct snapshot_policy {
  std::uint64_t since = 0;  // bytes of the entries applied since the last snapshot (+64 each)
  std::uint64_t floor = 0;  // 0: min_bytes()

  void applied(std::size_t entry_bytes) { since += entry_bytes + 64; }
  bool due(std::uint64_t state_bytes) const {
    return since >= std::max(floor ? floor : min_bytes(), state_bytes / 2);
  }
  void taken() { since = 0; }

  // 256 MiB; PEREGRINE_SNAPSHOT_MIN_BYTES sets another floor (tests make it small). The owner
  // copies a stream's whole store on its own thread (a helper encodes the copy), and every
  // snapshot's bytes stay in memory until the next: so snapshots stay rare; see
  // src/REPLICATION.md.
  static std::uint64_t min_bytes() {
    static const std::uint64_t v = [] {
      const char* e = std::getenv("PEREGRINE_SNAPSHOT_MIN_BYTES");
      return e != nullptr && *e != '\0' ? std::strtoull(e, nullptr, 10) : std::uint64_t(256) << 20;
    }();
    return v;
  }
  // The meta group's: its table is small and cheap to encode, so its log stays within 16 MiB
  // (or the test floor when that is lower).
  static std::uint64_t meta_floor() { return std::min<std::uint64_t>(min_bytes(), std::uint64_t(16) << 20); }
};

}  // namespace js
