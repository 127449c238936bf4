#include "storage/record.h"

#include <cstring>

#include "src/base/crc32c.h"

namespace storage {
namespace {

template <typename T>
void put(std::uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof v);
}
template <typename T>
T get(const std::uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

std::uint32_t record_crc(const std::uint8_t* p, std::uint32_t len) {
  std::uint32_t c = base::crc32c(p, 4);
  return base::crc32c(c, p + 8, len - 8);
}

}  // namespace

std::size_t encode_record(std::uint8_t* out, rec_kind kind, std::uint64_t seq, std::int64_t ts,
                          std::int64_t ttl, std::string_view subject, std::string_view headers,
                          std::string_view payload) {
  auto len = static_cast<std::uint32_t>(kRecHeader + subject.size() + headers.size() +
                                        payload.size());
  put<std::uint32_t>(out, len);
  put<std::uint64_t>(out + 8, seq);
  put<std::int64_t>(out + 16, ts);
  put<std::int64_t>(out + 24, ttl);
  put<std::uint16_t>(out + 32, static_cast<std::uint16_t>(subject.size()));
  out[34] = static_cast<std::uint8_t>(kind);
  out[35] = 0;
  put<std::uint32_t>(out + 36, static_cast<std::uint32_t>(headers.size()));
  std::uint8_t* b = out + kRecHeader;
  if (!subject.empty()) std::memcpy(b, subject.data(), subject.size());
  b += subject.size();
  if (!headers.empty()) std::memcpy(b, headers.data(), headers.size());
  b += headers.size();
  if (!payload.empty()) std::memcpy(b, payload.data(), payload.size());
  std::size_t padded = rec_pad(len);
  std::memset(out + len, 0, padded - len);
  put<std::uint32_t>(out + 4, record_crc(out, len));
  return padded;
}

decode_result decode_record(const std::uint8_t* p, std::size_t avail, record_view* out) {
  if (avail < 4) return avail == 0 ? decode_result::end : decode_result::truncated;
  auto len = get<std::uint32_t>(p);
  if (len == 0) return decode_result::end;
  if (len < kRecHeader || len > kRecMaxLen) return decode_result::corrupt;
  if (len > avail) return decode_result::truncated;
  std::uint8_t kind = p[34];
  if (kind < 1 || kind > 6 || p[35] != 0) return decode_result::corrupt;
  std::size_t subj = get<std::uint16_t>(p + 32);
  std::size_t hdr = get<std::uint32_t>(p + 36);
  if (kRecHeader + subj + hdr > len) return decode_result::corrupt;
  if (get<std::uint32_t>(p + 4) != record_crc(p, len)) return decode_result::corrupt;
  out->kind = static_cast<rec_kind>(kind);
  out->len = len;
  out->seq = get<std::uint64_t>(p + 8);
  out->ts = get<std::int64_t>(p + 16);
  out->ttl = get<std::int64_t>(p + 24);
  const char* b = reinterpret_cast<const char*>(p + kRecHeader);
  out->subject = {b, subj};
  out->headers = {b + subj, hdr};
  out->payload = {b + subj + hdr, len - kRecHeader - subj - hdr};
  return decode_result::ok;
}

}  // namespace storage
