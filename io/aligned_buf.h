#pragma once
// DIO alignment in one place: every O_DIRECT offset, length and buffer passes through these
// helpers. 4096 is this disk's physical block size and fits NVMe.
#include <cstddef>
#include <cstdint>

#include "src/base/assert.h"

namespace io {

constexpr std::size_t kDioAlign = 4096;

constexpr std::uint64_t align_down(std::uint64_t v) { return v & ~std::uint64_t(kDioAlign - 1); }
constexpr std::uint64_t align_up(std::uint64_t v) { return align_down(v + kDioAlign - 1); }
constexpr bool is_aligned(std::uint64_t v) { return (v & (kDioAlign - 1)) == 0; }

inline void assert_dio(std::uint64_t off, const void* buf, std::size_t len) {
  PG_ASSERT(is_aligned(off));
  PG_ASSERT(is_aligned(reinterpret_cast<std::uintptr_t>(buf)));
  PG_ASSERT(is_aligned(len));
}

// Owned, 4096-aligned, growable byte buffer. Growth copies (never on the fast path once
// the buffer reached its working size).
class aligned_buf {
 public:
  aligned_buf() = default;
  explicit aligned_buf(std::size_t cap) { reserve(cap); }
  ~aligned_buf();
  aligned_buf(aligned_buf&& o) noexcept;
  aligned_buf& operator=(aligned_buf&& o) noexcept;
  aligned_buf(const aligned_buf&) = delete;
  aligned_buf& operator=(const aligned_buf&) = delete;

  void reserve(std::size_t cap);  // keeps contents, rounds capacity up to kDioAlign
  void resize(std::size_t n);     // grows capacity as needed; new bytes are zero
  void resize_uninit(std::size_t n);  // same, new bytes unspecified (read targets)
  void clear() { _size = 0; }
  void append(const void* p, std::size_t n);
  std::uint8_t* data() { return _p; }
  const std::uint8_t* data() const { return _p; }
  std::size_t size() const { return _size; }
  std::size_t capacity() const { return _cap; }
  // Zero-pads up to the next kDioAlign boundary (capacity is always a multiple of it) and
  // returns the padded length.
  std::size_t padded_size();

 private:
  std::uint8_t* _p = nullptr;
  std::size_t _size = 0;
  std::size_t _cap = 0;
};

}  // namespace io
