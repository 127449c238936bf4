#include "src/repl/log_record.h"

#include <array>
#include <cstring>

#include "src/base/crc32c.h"

namespace repl {
namespace {

enum record_kind : std::uint8_t { kind_hard_state = 1, kind_entries = 2, kind_snapshot = 3, kind_snapshot_file = 4 };
constexpr std::size_t kHeader = 9;                   // crc, length, kind
constexpr std::uint32_t kMaxBody = 64u << 20;        // a corrupt length must not allocate GBs
constexpr std::uint32_t kMaxSnapshotBody = 1u << 30;  // a stream's state: larger, still bounded

std::array<std::uint32_t, 256> make_crc_table() {
  std::array<std::uint32_t, 256> t{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[i] = c;
  }
  return t;
}

void put_u8(std::vector<std::uint8_t>& out, std::uint8_t v) { out.push_back(v); }
void put_u32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(std::uint8_t(v >> (8 * i)));
}
void put_u64(std::vector<std::uint8_t>& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(std::uint8_t(v >> (8 * i)));
}

// Bounds-checked little-endian reader; any over-read sets `bad`.
struct reader {
  std::span<const std::uint8_t> b;
  std::size_t at = 0;
  bool bad = false;
  bool need(std::size_t n) {
    if (bad || b.size() - at < n) bad = true;
    return !bad;
  }
  std::uint64_t uint(int bytes) {
    if (!need(std::size_t(bytes))) return 0;
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= std::uint64_t(b[at + std::size_t(i)]) << (8 * i);
    at += std::size_t(bytes);
    return v;
  }
};

void finish_record(std::vector<std::uint8_t>& out, std::size_t start) {
  const std::uint32_t body = std::uint32_t(out.size() - start - kHeader);
  for (int i = 0; i < 4; ++i) out[start + 4 + std::size_t(i)] = std::uint8_t(body >> (8 * i));
  const std::uint32_t c = record_crc({out.data() + start + 4, out.size() - start - 4});
  for (int i = 0; i < 4; ++i) out[start + std::size_t(i)] = std::uint8_t(c >> (8 * i));
}

bool apply_entries(reader& r, loaded_log& log) {
  const std::uint64_t first = r.uint(8);
  const std::uint64_t count = r.uint(4);
  const std::uint64_t next = log.start_index + log.entries.size();
  if (r.bad || first > next) return false;
  std::vector<entry> incoming;
  for (std::uint64_t i = 0; i < count; ++i) {
    entry e;
    e.term = r.uint(8);
    const std::uint64_t type = r.uint(1);
    const std::uint64_t len = r.uint(4);
    if (r.bad || type < 1 || type > 3 || !r.need(len)) return false;
    e.type = entry_type(type);
    e.data.assign(r.b.begin() + std::ptrdiff_t(r.at), r.b.begin() + std::ptrdiff_t(r.at + len));
    r.at += len;
    incoming.push_back(std::move(e));
  }
  if (r.at != r.b.size()) return false;
  // Entries a snapshot already covers (below start_index) are not the log's any more.
  const std::uint64_t skip = first < log.start_index ? log.start_index - first : 0;
  if (skip >= incoming.size() && skip > 0) return true;
  log.entries.resize(first + skip - log.start_index);
  for (std::size_t i = std::size_t(skip); i < incoming.size(); ++i) log.entries.push_back(std::move(incoming[i]));
  return true;
}

bool read_snapshot(reader& r, loaded_log& log, bool in_file) {
  stored_snapshot s;
  s.meta.index = r.uint(8);
  s.meta.term = r.uint(8);
  s.meta.conf_index = r.uint(8);
  const std::uint64_t keep_from = r.uint(8);
  const std::uint64_t conf_len = r.uint(4);
  if (r.bad || s.meta.index == 0 || s.meta.term == 0 || !r.need(conf_len)) return false;
  s.meta.conf.assign(r.b.begin() + std::ptrdiff_t(r.at), r.b.begin() + std::ptrdiff_t(r.at + conf_len));
  r.at += conf_len;
  if (in_file) {
    s.size = r.uint(8);
    s.crc = std::uint32_t(r.uint(4));
    const std::uint64_t name_len = r.uint(2);
    if (r.bad || name_len == 0 || !r.need(name_len) || r.at + name_len != r.b.size()) return false;
    s.file.assign(reinterpret_cast<const char*>(r.b.data() + r.at), std::size_t(name_len));
    if (s.file.find('/') != std::string::npos || s.file.starts_with(".")) return false;
    apply_snapshot(log, s, keep_from);
    return true;
  }
  const std::uint64_t data_len = r.uint(8);
  if (r.bad || !r.need(data_len) || r.at + data_len != r.b.size()) return false;
  s.data = std::make_shared<const std::vector<std::uint8_t>>(r.b.begin() + std::ptrdiff_t(r.at), r.b.end());
  apply_snapshot(log, s, keep_from);
  return true;
}

}  // namespace

void apply_snapshot(loaded_log& log, const stored_snapshot& s, std::uint64_t keep_from) {
  const std::uint64_t next = log.start_index + log.entries.size();
  if (log.entries.empty() && keep_from <= s.meta.index && keep_from >= log.start_index) {
    // A journal rewrite's image: the snapshot first, then the entries it kept from keep_from.
    log.start_index = keep_from;
  } else if (keep_from > s.meta.index || next <= s.meta.index) {
    // Installed (or the log does not reach the snapshot): nothing before it or after it stays.
    log.entries.clear();
    log.start_index = s.meta.index + 1;
  } else if (keep_from > log.start_index) {
    log.entries.erase(log.entries.begin(), log.entries.begin() + std::ptrdiff_t(keep_from - log.start_index));
    log.start_index = keep_from;
  }
  log.snapshot = s;
}

namespace {

// What both snapshot records start with; returns the record's start for finish_record.
std::size_t put_snapshot_head(std::vector<std::uint8_t>& out, record_kind kind, const stored_snapshot& s,
                              std::uint64_t keep_from) {
  const std::size_t start = out.size();
  out.resize(start + 8);
  put_u8(out, kind);
  put_u64(out, s.meta.index);
  put_u64(out, s.meta.term);
  put_u64(out, s.meta.conf_index);
  put_u64(out, keep_from);
  put_u32(out, std::uint32_t(s.meta.conf.size()));
  out.insert(out.end(), s.meta.conf.begin(), s.meta.conf.end());
  return start;
}

}  // namespace

void append_snapshot_record(std::vector<std::uint8_t>& out, const stored_snapshot& s,
                            std::uint64_t keep_from) {
  const std::size_t start = put_snapshot_head(out, kind_snapshot, s, keep_from);
  const std::size_t n = s.data ? s.data->size() : 0;
  put_u64(out, n);
  if (n > 0) out.insert(out.end(), s.data->begin(), s.data->end());
  finish_record(out, start);
}

void append_snapshot_file_record(std::vector<std::uint8_t>& out, const stored_snapshot& s,
                                 std::uint64_t keep_from) {
  const std::size_t start = put_snapshot_head(out, kind_snapshot_file, s, keep_from);
  put_u64(out, s.size);
  put_u32(out, s.crc);
  out.push_back(std::uint8_t(s.file.size()));
  out.push_back(std::uint8_t(s.file.size() >> 8));
  out.insert(out.end(), s.file.begin(), s.file.end());
  finish_record(out, start);
}

std::uint32_t record_crc(std::span<const std::uint8_t> bytes) { return base::crc32c(bytes.data(), bytes.size()); }

bool record_crc_matches(std::span<const std::uint8_t> bytes, std::uint32_t crc) {
  return record_crc(bytes) == crc || legacy_crc32(bytes) == crc;
}

std::uint32_t legacy_crc32(std::span<const std::uint8_t> bytes) {
  static const auto table = make_crc_table();
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::uint8_t byte : bytes) c = table[(c ^ byte) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

void append_hard_state_record(std::vector<std::uint8_t>& out, const hard_state& hs) {
  const std::size_t start = out.size();
  out.resize(start + 8);
  put_u8(out, kind_hard_state);
  put_u64(out, hs.term);
  put_u64(out, hs.voted_for);
  put_u64(out, hs.incarnation);
  finish_record(out, start);
}

void append_entries_record(std::vector<std::uint8_t>& out, std::uint64_t first_index,
                           std::span<const entry> entries) {
  const std::size_t start = out.size();
  out.resize(start + 8);
  put_u8(out, kind_entries);
  put_u64(out, first_index);
  put_u32(out, std::uint32_t(entries.size()));
  for (const entry& e : entries) {
    put_u64(out, e.term);
    put_u8(out, std::uint8_t(e.type));
    put_u32(out, std::uint32_t(e.data.size()));
    out.insert(out.end(), e.data.begin(), e.data.end());
  }
  finish_record(out, start);
}

std::size_t replay_records(std::span<const std::uint8_t> bytes, loaded_log& log) {
  std::size_t at = 0;
  while (bytes.size() - at >= kHeader) {
    reader h{bytes.subspan(at, kHeader)};
    const std::uint32_t crc = std::uint32_t(h.uint(4));
    const std::uint32_t body = std::uint32_t(h.uint(4));
    const std::uint8_t kind = std::uint8_t(h.uint(1));
    if (body > (kind == kind_snapshot ? kMaxSnapshotBody : kMaxBody) || bytes.size() - at - kHeader < body) break;
    if (!record_crc_matches(bytes.subspan(at + 4, kHeader - 4 + body), crc)) break;
    reader r{bytes.subspan(at + kHeader, body)};
    if (kind == kind_hard_state) {
      hard_state hs{r.uint(8), r.uint(8), r.uint(8)};
      if (r.bad || r.at != body) break;
      log.hard = hs;
    } else if (kind == kind_snapshot || kind == kind_snapshot_file) {
      if (!read_snapshot(r, log, kind == kind_snapshot_file)) break;
    } else if (kind != kind_entries || !apply_entries(r, log)) {
      break;
    }
    at += kHeader + body;
  }
  return at;
}

}  // namespace repl
