#pragma once
// file: one open file on a backend, with synchronous helpers (write_at waits for its own
// completion). Stores use the backend's async writes directly; this is for the simple
// cases (headers, tests, benchmarks).
#include <string>

#include "io/backend.h"

namespace io {

class file {
 public:
  file() = default;
  file(backend* b, int fh) : _b(b), _fh(fh) {}
  ~file() { close(); }
  file(file&& o) noexcept : _b(o._b), _fh(o._fh) { o._fh = -1; }
  file& operator=(file&& o) noexcept;
  file(const file&) = delete;
  file& operator=(const file&) = delete;

  static base::result<file> open(backend& b, const std::string& path, bool create);
  bool is_open() const { return _fh >= 0; }
  int handle() const { return _fh; }
  base::status allocate(std::uint64_t len) { return _b->allocate(_fh, len); }
  base::result<std::size_t> write_at(std::uint64_t off, const void* buf, std::size_t len,
                                     bool durable = false);
  base::result<std::size_t> read_at(std::uint64_t off, void* buf, std::size_t len) {
    return _b->read_at(_fh, off, buf, len);
  }
  base::status datasync() { return _b->datasync(_fh); }
  void close();

 private:
  backend* _b = nullptr;
  int _fh = -1;
};

}  // namespace io
