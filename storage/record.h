#pragma once
// The block-file record format (a pure codec, base only). Little-endian, 8-byte aligned:
//
//   u32 len        header + body bytes, before padding; 0 marks the end of written data
//   u32 crc32c     over len and everything from seq to the end of the body
//   u64 seq
//   i64 ts         unix ns
//   i64 ttl        ns, 0 none, -1 never
//   u16 subj_len
//   u8  kind       msg, tombstone, purge, skip, erased, meta
//   u8  reserved   0
//   u32 hdr_len
//   subject, headers, payload, zero padding to 8
//
// A tombstone names the removed seq; purge removes everything below seq; skip raises
// last_seq to seq; erased is a message whose bytes were overwritten (reads as removed);
// meta sets the owner's metadata value named by the subject field to the payload (empty:
// removed), e.g. the stream's and its consumers' configs (file_store::set_meta).
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace storage {

constexpr std::size_t kRecHeader = 40;
constexpr std::size_t kRecAlign = 8;
constexpr std::uint32_t kRecMaxLen = 64u << 20;

enum class rec_kind : std::uint8_t { msg = 1, tomb = 2, purge = 3, skip = 4, erased = 5, meta = 6 };

struct record_view {
  rec_kind kind = rec_kind::msg;
  std::uint32_t len = 0;  // unpadded
  std::uint64_t seq = 0;
  std::int64_t ts = 0;
  std::int64_t ttl = 0;
  std::string_view subject, headers, payload;
};

constexpr std::size_t rec_pad(std::size_t n) { return (n + kRecAlign - 1) & ~(kRecAlign - 1); }

inline std::size_t record_size(std::size_t subj, std::size_t hdr, std::size_t payload) {
  return rec_pad(kRecHeader + subj + hdr + payload);
}

// Writes one record at out (room for record_size bytes); returns the padded size.
std::size_t encode_record(std::uint8_t* out, rec_kind kind, std::uint64_t seq, std::int64_t ts,
                          std::int64_t ttl, std::string_view subject, std::string_view headers,
                          std::string_view payload);

enum class decode_result { ok, end, truncated, corrupt };

// Decodes the record at p with avail bytes readable. end: a zero length word (unwritten
// space); truncated: the record runs past avail; corrupt: bad length, kind or checksum.
decode_result decode_record(const std::uint8_t* p, std::size_t avail, record_view* out);

}  // namespace storage
