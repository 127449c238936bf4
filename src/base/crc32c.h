#pragma once
// CRC-32C (Castagnoli) for record checksums: SSE4.2 crc32 instruction when the CPU has
// it, a table otherwise.
#include <cstddef>
#include <cstdint>

namespace base {

std::uint32_t crc32c(std::uint32_t crc, const void* data, std::size_t len);
inline std::uint32_t crc32c(const void* data, std::size_t len) { return crc32c(0, data, len); }

}  // namespace base
