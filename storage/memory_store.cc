#include "storage/memory_store.h"

#include <cstring>

namespace storage {
namespace {

constexpr std::uint64_t make_loc(std::uint32_t id, std::uint32_t off) { return (std::uint64_t(id) << 32) | off; }
constexpr std::uint32_t loc_id(std::uint64_t loc) { return std::uint32_t(loc >> 32); }
constexpr std::uint32_t loc_off(std::uint64_t loc) { return std::uint32_t(loc); }

}  // namespace

memory_store::memory_store(const memory_store& o)
    : indexed_store(o),
      _free_ids(o._free_ids),
      _cur(o._cur),
      _next_cap(o._next_cap),
      _chunk_bytes(o._chunk_bytes),
      _reported(o._reported) {
  _chunks.resize(o._chunks.size());
  for (std::size_t i = 0; i < o._chunks.size(); ++i) {
    const chunk& from = o._chunks[i];
    chunk& to = _chunks[i];
    to.cap = from.cap;
    to.used = from.used;
    to.live = from.live;
    if (!from.bytes) continue;
    to.bytes = std::make_unique_for_overwrite<char[]>(from.cap);
    std::memcpy(to.bytes.get(), from.bytes.get(), from.used);
  }
}

std::unique_ptr<stream_store> memory_store::clone() const {
  return std::unique_ptr<stream_store>(new memory_store(*this));
}

base::status memory_store::reset() {
  auto purged = purge({"", 0, 0});
  if (!purged.ok()) return purged.err();
  rewind_empty();
  return {};
}

int memory_store::poll() {
  if (_reported == last_seq()) return 0;
  _reported = last_seq();
  if (_on_durable) _on_durable(_reported);
  return 1;
}

std::pair<std::uint32_t, std::uint32_t> memory_store::reserve(std::uint32_t rec) {
  if (_cur < _chunks.size() && _chunks[_cur].cap - _chunks[_cur].used >= rec) return {_cur, _chunks[_cur].used};
  // A new chunk: the next size up, or one of the record's own size for a big message (it
  // does not become the current chunk, so small records keep filling the current one).
  const bool own = rec > kMaxChunk / 4;
  std::uint32_t cap = own ? rec : _next_cap;
  while (cap < rec) cap *= 2;
  std::uint32_t id;
  if (!_free_ids.empty()) {
    id = _free_ids.back();
    _free_ids.pop_back();
  } else {
    id = static_cast<std::uint32_t>(_chunks.size());
    _chunks.emplace_back();
  }
  chunk& c = _chunks[id];
  c.bytes.reset(new char[cap]);
  c.cap = cap;
  c.used = 0;
  c.live = 0;
  _chunk_bytes += cap;
  if (!own) {
    if (_cur < _chunks.size() && _chunks[_cur].live == 0) release(_cur);
    _cur = id;
    _next_cap = std::min(kMaxChunk, cap * 2);
  }
  return {id, 0};
}

std::uint64_t memory_store::put(std::uint64_t seq, std::string_view a, std::string_view b) {
  const std::uint32_t len = static_cast<std::uint32_t>(a.size() + b.size());
  const auto [id, off] = reserve(kRecHeader + len);
  chunk& c = _chunks[id];
  char* p = c.bytes.get() + off;
  std::memcpy(p, &seq, 8);
  std::memcpy(p + 8, &len, 4);
  if (!a.empty()) std::memcpy(p + kRecHeader, a.data(), a.size());
  if (!b.empty()) std::memcpy(p + kRecHeader + a.size(), b.data(), b.size());
  c.used = off + kRecHeader + len;
  c.live += kRecHeader + len;
  return make_loc(id, off);
}

const char* memory_store::bytes_at(std::uint64_t loc) const {
  return _chunks[loc_id(loc)].bytes.get() + loc_off(loc) + kRecHeader;
}

base::status memory_store::persist_msg(std::uint64_t seq, msg_entry& e, std::string_view,
                                       std::string_view headers, std::string_view payload) {
  e.loc = put(seq, headers, payload);
  return {};
}

base::result<stored_msg> memory_store::fetch(std::uint64_t seq, const msg_entry& e) {
  stored_msg m;
  m.seq = seq;
  m.ts = e.ts;
  m.ttl = e.ttl;
  m.subject = subject_name(e.subj);
  const char* p = bytes_at(e.loc);
  m.headers.assign(p, e.hdr_len);
  m.payload.assign(p + e.hdr_len, e.payload_len);
  return m;
}

void memory_store::release(std::uint32_t id) {
  chunk& c = _chunks[id];
  _chunk_bytes -= c.cap;
  c.bytes.reset();
  c.cap = c.used = c.live = 0;
  _free_ids.push_back(id);
  if (id == _cur) _cur = 0xffffffffu;
}

// Moves the chunk's live records (all but `dropping`, which is on its way out) to the
// current chunk, then frees it.
void memory_store::compact(std::uint32_t id, std::uint64_t dropping) {
  for (std::uint32_t off = 0; off < _chunks[id].used;) {
    const char* p = _chunks[id].bytes.get() + off;
    std::uint64_t seq;
    std::uint32_t len;
    std::memcpy(&seq, p, 8);
    std::memcpy(&len, p + 8, 4);
    const msg_entry* e = seq == dropping ? nullptr : find(seq);
    if (e && e->loc == make_loc(id, off)) {
      const std::string_view bytes(p + kRecHeader, len);
      const std::uint64_t loc = put(seq, bytes, {});  // may grow _chunks: p is re-read below
      set_loc(seq, loc);
    }
    off += kRecHeader + len;
  }
  release(id);
}

void memory_store::dropped(std::uint64_t seq, const msg_entry& e) {
  const std::uint32_t id = loc_id(e.loc);
  chunk& c = _chunks[id];
  c.live -= kRecHeader + e.hdr_len + e.payload_len;
  if (id == _cur) {
    if (c.live == 0) c.used = 0;  // empty: refill from the start
    return;
  }
  if (c.live == 0) return release(id);
  if (c.live < c.cap / 4 && c.cap >= 4 * kFirstChunk) compact(id, seq);
}

}  // namespace storage
