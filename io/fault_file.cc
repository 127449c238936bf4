#include "io/fault_file.h"

#include <cerrno>
#include <cstring>

#include "io/aligned_buf.h"

namespace io {

base::status fault_backend::allocate(int fh, std::uint64_t len) {
  if (_crashed) return base::errc::io_error;
  if (_allocated + len > _space) return base::error{base::errc::no_space, ENOSPC};
  _allocated += len;
  return _in->allocate(fh, len);
}

base::status fault_backend::submit_write(int fh, std::uint64_t off, const void* buf,
                                         std::size_t len, bool durable, std::uint64_t token) {
  ++_writes;
  if (durable) ++_durable_writes;
  if (_crashed) {  // the process is gone: nothing reaches the disk any more
    _injected.push_back({token, -ECANCELED});
    return {};
  }
  if (_fail_err) {
    _injected.push_back({token, -_fail_err});
    _fail_err = 0;
    return {};
  }
  if (_space != ~std::uint64_t(0) && off + len > _space) {
    _injected.push_back({token, -ENOSPC});
    return {};
  }
  if (_torn) {
    // Persist a prefix synchronously through a private aligned copy, then crash.
    std::size_t keep = std::min(_torn, len);
    _torn = 0;
    _crashed = true;
    _injected.push_back({token, -ECANCELED});
    if (keep == 0) return {};
    aligned_buf b(align_up(keep));
    b.append(buf, keep);
    std::size_t wlen = direct() ? b.padded_size() : keep;
    if (direct() && wlen != keep) {
      // O_DIRECT cannot write a partial page: merge the old page tail back in.
      aligned_buf old(kDioAlign);
      old.resize(kDioAlign);
      std::uint64_t page = off + align_down(keep);
      if (auto r = _in->read_at(fh, page, old.data(), kDioAlign); r)
        std::memcpy(b.data() + align_down(keep) + (keep % kDioAlign),
                    old.data() + (keep % kDioAlign), kDioAlign - keep % kDioAlign);
    }
    if (_in->submit_write(fh, off, b.data(), wlen, true, 0)) {
      completion c;
      while (_in->reap(&c, 1, true) == 0) {
      }
    }
    return {};
  }
  if (_short && _short < len) {
    std::size_t n = _short;
    _short = 0;
    return _in->submit_write(fh, off, buf, n, durable, token);
  }
  _short = 0;
  if (_flip_at < len) {
    aligned_buf b(len);
    b.append(buf, len);
    b.data()[_flip_at] ^= std::uint8_t(1u << _flip_bit);
    _flip_at = ~std::size_t(0);
    // Synchronous so the private copy outlives the write.
    auto st = _in->submit_write(fh, off, b.data(), len, durable, token);
    if (!st) return st;
    completion c;
    while (_in->reap(&c, 1, true) == 0) {
    }
    _injected.push_back(c);
    return {};
  }
  return _in->submit_write(fh, off, buf, len, durable, token);
}

int fault_backend::reap(completion* out, int max, bool wait) {
  int n = 0;
  while (n < max && !_injected.empty()) {
    out[n++] = _injected.front();
    _injected.erase(_injected.begin());
  }
  if (_crashed || n > 0) return n;
  return _in->reap(out, max, wait);
}

}  // namespace io
