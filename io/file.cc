#include "io/file.h"

#include <vector>

#include "io/sync_backend.h"

namespace io {

file& file::operator=(file&& o) noexcept {
  if (this != &o) {
    close();
    _b = o._b;
    _fh = o._fh;
    o._fh = -1;
  }
  return *this;
}

base::result<file> file::open(backend& b, const std::string& path, bool create) {
  auto fh = b.open(path, create);
  if (!fh) return fh.err();
  return file(&b, *fh);
}

base::result<std::size_t> file::write_at(std::uint64_t off, const void* buf, std::size_t len,
                                          bool durable) {
  constexpr std::uint64_t kToken = 0x7f17e;
  if (auto st = _b->submit_write(_fh, off, buf, len, durable, kToken); !st) return st.err();
  // Other completions are not expected here: file is used where nothing else is in flight.
  completion c;
  while (_b->reap(&c, 1, true) == 0) {
  }
  if (c.res < 0) return sys_error(-c.res);
  return std::size_t(c.res);
}

void file::close() {
  if (_fh >= 0 && _b) _b->close(_fh);
  _fh = -1;
}

}  // namespace io
