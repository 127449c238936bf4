#include "src/base/crc32c.h"

#include <nmmintrin.h>

#include <array>
#include <cstring>

namespace base {
namespace {

constexpr std::uint32_t kPoly = 0x82f63b78u;  // reflected Castagnoli

constexpr std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr auto kTable = make_table();

std::uint32_t crc_table(std::uint32_t crc, const std::uint8_t* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) crc = kTable[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return crc;
}

__attribute__((target("sse4.2"))) std::uint32_t crc_hw(std::uint32_t crc, const std::uint8_t* p,
                                                        std::size_t n) {
  std::uint64_t c = crc;
  while (n >= 8) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    n -= 8;
  }
  std::uint32_t c32 = static_cast<std::uint32_t>(c);
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}

const bool kHaveHw = __builtin_cpu_supports("sse4.2");

}  // namespace

std::uint32_t crc32c(std::uint32_t crc, const void* data, std::size_t len) {
  auto* p = static_cast<const std::uint8_t*>(data);
  crc = ~crc;
  crc = kHaveHw ? crc_hw(crc, p, len) : crc_table(crc, p, len);
  return ~crc;
}

}  // namespace base
