#include "io/aligned_buf.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace io {

aligned_buf::~aligned_buf() { std::free(_p); }

aligned_buf::aligned_buf(aligned_buf&& o) noexcept
    : _p(std::exchange(o._p, nullptr)), _size(std::exchange(o._size, 0)),
      _cap(std::exchange(o._cap, 0)) {}

aligned_buf& aligned_buf::operator=(aligned_buf&& o) noexcept {
  if (this != &o) {
    std::free(_p);
    _p = std::exchange(o._p, nullptr);
    _size = std::exchange(o._size, 0);
    _cap = std::exchange(o._cap, 0);
  }
  return *this;
}

void aligned_buf::reserve(std::size_t cap) {
  cap = align_up(cap);
  if (cap <= _cap) return;
  auto* p = static_cast<std::uint8_t*>(std::aligned_alloc(kDioAlign, cap));
  PG_ASSERT(p != nullptr);
  if (_size) std::memcpy(p, _p, _size);
  std::free(_p);
  _p = p;
  _cap = cap;
  PG_ASSERT(is_aligned(reinterpret_cast<std::uintptr_t>(_p)));
}

void aligned_buf::resize(std::size_t n) {
  if (n > _cap) reserve(n > 2 * _cap ? n : 2 * _cap);
  if (n > _size) std::memset(_p + _size, 0, n - _size);
  _size = n;
}

void aligned_buf::resize_uninit(std::size_t n) {
  if (n > _cap) reserve(n > 2 * _cap ? n : 2 * _cap);
  _size = n;
}

void aligned_buf::append(const void* p, std::size_t n) {
  if (n == 0) return;
  std::size_t old = _size;
  resize(_size + n);
  std::memcpy(_p + old, p, n);
}

std::size_t aligned_buf::padded_size() {
  std::size_t padded = align_up(_size);
  if (padded > _cap) reserve(padded);
  std::memset(_p + _size, 0, padded - _size);
  return padded;
}

}  // namespace io
