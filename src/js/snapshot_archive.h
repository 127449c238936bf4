#pragma once
// Peregrine's stream snapshot archive (STREAM.SNAPSHOT / RESTORE), pure: bytes in, bytes out.
// Its own format, not nats-server's tar/s2 (nats-server cannot read it, nor it theirs):
//   "PGSNAP1\n"
//   records: [u8 type][u32 le length][length bytes]
//     'S' stream: JSON {"config":{..},"created":"<rfc3339>","first_seq":n,"last_seq":n}
//     'M' message: u64 seq, i64 ts, i64 ttl, u32 subject len, subject, u32 headers len,
//         headers, payload (the rest); all integers little-endian
//     'C' consumer: JSON {"config":{..},"created":..,"state":{..}} (durables only)
//   'E' end: u32 record count, u32 crc32c of every byte before this record
// A missing end record is a truncated archive; a checksum or framing mismatch a corrupt one.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "storage/consumer_state.h"
#include "storage/store.h"

namespace js {

class snapshot_writer {
 public:
  snapshot_writer();
  void stream(const nlohmann::ordered_json& meta) { record('S', meta.dump()); }
  void message(const storage::stored_msg& m);
  void consumer(const nlohmann::ordered_json& c) { record('C', c.dump()); }
  // Appends the end record and hands the archive over.
  std::string finish();

 private:
  void record(char type, std::string_view body);
  std::string _out;
  std::uint32_t _count = 0;
};

struct snapshot_contents {
  nlohmann::ordered_json stream;  // the 'S' record
  std::vector<storage::stored_msg> messages;
  std::vector<nlohmann::ordered_json> consumers;
};

// Checks the whole archive before anything is built from it. Error texts are the reason a
// restore failed ("snapshot truncated", "snapshot corrupt: ...").
std::optional<snapshot_contents> read_snapshot(std::string_view bytes, std::string& error);

// Consumer state <-> JSON inside a 'C' record.
nlohmann::ordered_json consumer_state_json(const storage::consumer_state& s);
std::optional<storage::consumer_state> consumer_state_from_json(const nlohmann::ordered_json& j);

}  // namespace js
