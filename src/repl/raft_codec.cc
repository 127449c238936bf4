#include "src/repl/raft_codec.h"

#include <cstring>

namespace repl {
namespace {

constexpr std::uint8_t kFrameVersion = 1;
constexpr std::size_t kRouteBytes = 1 + 8 + 8 + 8 + 8 + 8;
constexpr std::size_t kEntryHeader = 8 + 1 + 4;

struct writer {
  std::vector<std::uint8_t>& out;
  void u(std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(std::uint8_t(v >> (8 * i)));
  }
};

struct reader {
  std::span<const std::uint8_t> b;
  std::size_t at = 0;
  bool bad = false;
  std::size_t left() const { return b.size() - at; }
  std::uint64_t u(int bytes) {
    if (bad || left() < std::size_t(bytes)) {
      bad = true;
      return 0;
    }
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= std::uint64_t(b[at + std::size_t(i)]) << (8 * i);
    at += std::size_t(bytes);
    return v;
  }
  bool flag() { return u(1) != 0; }
};

bool encode_entries(writer& w, const raft_append_entries& ae, const log_store& log) {
  w.u(ae.n_entries, 4);
  for (unsigned i = 0; i < ae.n_entries; ++i) {
    const entry* e = log.entry_at(ae.prev_log_index + 1 + i);
    if (e == nullptr) return false;
    w.u(e->term, 8);
    w.u(std::uint8_t(e->type), 1);
    w.u(e->data.size(), 4);
    w.out.insert(w.out.end(), e->data.begin(), e->data.end());
  }
  return true;
}

bool decode_entries(reader& r, raft_append_entries& ae) {
  const std::uint64_t n = r.u(4);
  ae.n_entries = 0;
  ae.entries = nullptr;
  if (r.bad || n > r.left() / kEntryHeader) return false;  // a lying count allocates nothing
  if (n == 0) return r.left() == 0;
  // First pass: validate and size the batch.
  reader scan = r;
  std::size_t total = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t term = scan.u(8);
    const std::uint64_t type = scan.u(1);
    const std::uint64_t len = scan.u(4);
    if (scan.bad || term == 0 || type < RAFT_COMMAND || type > RAFT_CHANGE || len > scan.left())
      return false;
    scan.at += len;
    total += len;
  }
  if (scan.left() != 0) return false;
  auto* entries = static_cast<raft_entry*>(raft_calloc(n, sizeof(raft_entry)));
  auto* batch = static_cast<std::uint8_t*>(raft_malloc(total == 0 ? 1 : total));
  if (entries == nullptr || batch == nullptr) {
    raft_free(entries);
    raft_free(batch);
    return false;
  }
  std::size_t cursor = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    raft_entry& e = entries[i];
    e.term = r.u(8);
    e.type = raft_entry_type(r.u(1));
    const std::size_t len = std::size_t(r.u(4));
    std::memcpy(batch + cursor, r.b.data() + r.at, len);
    r.at += len;
    e.buf.base = batch + cursor;
    e.buf.len = len;
    e.batch = batch;
    cursor += len;
  }
  ae.entries = entries;
  ae.n_entries = unsigned(n);
  return true;
}

}  // namespace

std::optional<frame_route> peek_route(std::span<const std::uint8_t> frame) {
  reader r{frame};
  if (r.u(1) != kFrameVersion) return std::nullopt;
  frame_route route;
  route.group = r.u(8);
  route.from = r.u(8);
  route.to = r.u(8);
  route.incarnation = r.u(8);
  route.seq = r.u(8);
  if (r.bad) return std::nullopt;
  return route;
}

namespace {

void put_route(writer& w, const frame_route& route, std::uint64_t to, std::uint8_t type) {
  w.u(kFrameVersion, 1);
  w.u(route.group, 8);
  w.u(route.from, 8);
  w.u(to, 8);
  w.u(route.incarnation, 8);
  w.u(route.seq, 8);
  w.u(type, 1);
}

}  // namespace

bool encode_snapshot_frames(std::vector<std::vector<std::uint8_t>>& frames, frame_route route,
                            const raft_message& m, const log_store& log) {
  const raft_install_snapshot& is = m.install_snapshot;
  const stored_snapshot* snap = log.snapshot();
  if (m.type != RAFT_INSTALL_SNAPSHOT || snap == nullptr || snap->meta.index != is.last_index) return false;
  static const std::vector<std::uint8_t> none;
  const std::vector<std::uint8_t>& data = snap->data ? *snap->data : none;
  std::size_t offset = 0;
  while (data.size() - offset > kSnapshotChunk) {
    std::vector<std::uint8_t>& f = frames.emplace_back();
    writer w{f};
    put_route(w, route, m.server_id, kSnapshotChunkType);
    w.u(is.last_index, 8), w.u(offset, 8), w.u(kSnapshotChunk, 4);
    f.insert(f.end(), data.begin() + std::ptrdiff_t(offset), data.begin() + std::ptrdiff_t(offset + kSnapshotChunk));
    offset += kSnapshotChunk;
    ++route.seq;
  }
  std::vector<std::uint8_t>& f = frames.emplace_back();
  writer w{f};
  put_route(w, route, m.server_id, RAFT_INSTALL_SNAPSHOT);
  w.u(is.version, 1), w.u(is.term, 8), w.u(is.last_index, 8), w.u(snap->meta.term, 8);
  w.u(snap->meta.conf_index, 8), w.u(snap->meta.conf.size(), 4);
  f.insert(f.end(), snap->meta.conf.begin(), snap->meta.conf.end());
  w.u(offset, 8), w.u(data.size() - offset, 8);
  f.insert(f.end(), data.begin() + std::ptrdiff_t(offset), data.end());
  return true;
}

bool encode_frame(std::vector<std::uint8_t>& out, frame_route route, const raft_message& m,
                  const log_store& log) {
  const std::size_t start = out.size();
  writer w{out};
  put_route(w, route, m.server_id, std::uint8_t(m.type));
  bool ok = true;
  switch (m.type) {
    case RAFT_REQUEST_VOTE: {
      const auto& v = m.request_vote;
      w.u(v.version, 1), w.u(v.term, 8), w.u(v.candidate_id, 8);
      w.u(v.last_log_index, 8), w.u(v.last_log_term, 8);
      w.u(v.disrupt_leader, 1), w.u(v.pre_vote, 1);
      break;
    }
    case RAFT_REQUEST_VOTE_RESULT: {
      const auto& v = m.request_vote_result;
      w.u(v.version, 1), w.u(v.term, 8), w.u(v.vote_granted, 1), w.u(v.pre_vote, 1);
      w.u(v.features, 2), w.u(v.capacity, 2);
      break;
    }
    case RAFT_APPEND_ENTRIES: {
      const auto& a = m.append_entries;
      w.u(a.version, 1), w.u(a.term, 8), w.u(a.prev_log_index, 8), w.u(a.prev_log_term, 8);
      w.u(a.leader_commit, 8);
      ok = encode_entries(w, a, log);
      break;
    }
    case RAFT_APPEND_ENTRIES_RESULT: {
      const auto& a = m.append_entries_result;
      w.u(a.version, 1), w.u(a.term, 8), w.u(a.rejected, 8), w.u(a.last_log_index, 8);
      w.u(a.features, 2), w.u(a.capacity, 2);
      break;
    }
    case RAFT_TIMEOUT_NOW: {
      const auto& t = m.timeout_now;
      w.u(t.version, 1), w.u(t.term, 8), w.u(t.last_log_index, 8), w.u(t.last_log_term, 8);
      break;
    }
    default:
      ok = false;  // RAFT_INSTALL_SNAPSHOT: encode_snapshot_frames
      break;
  }
  if (!ok) out.resize(start);
  return ok;
}

std::optional<decoded_frame> decode_frame(std::span<const std::uint8_t> frame) {
  auto route = peek_route(frame);
  if (!route || route->from == 0) return std::nullopt;
  reader r{frame};
  r.at = kRouteBytes;
  decoded_frame d;
  d.route = *route;
  raft_message& m = d.msg;
  m.server_id = route->from;
  const std::uint64_t type = r.u(1);
  if (type == kSnapshotChunkType) {
    d.chunk_index = r.u(8);
    d.chunk_offset = r.u(8);
    const std::uint64_t len = r.u(4);
    if (r.bad || len != r.left() || len == 0) return std::nullopt;
    d.is_chunk = true;
    d.chunk.assign(r.b.begin() + std::ptrdiff_t(r.at), r.b.end());
    return d;
  }
  switch (type) {
    case RAFT_REQUEST_VOTE: {
      auto& v = m.request_vote;
      v.version = std::uint8_t(r.u(1)), v.term = r.u(8), v.candidate_id = r.u(8);
      v.last_log_index = r.u(8), v.last_log_term = r.u(8);
      v.disrupt_leader = r.flag(), v.pre_vote = r.flag();
      break;
    }
    case RAFT_REQUEST_VOTE_RESULT: {
      auto& v = m.request_vote_result;
      v.version = std::uint8_t(r.u(1)), v.term = r.u(8), v.vote_granted = r.flag();
      v.pre_vote = r.flag(), v.features = std::uint16_t(r.u(2));
      v.capacity = std::uint16_t(r.u(2));
      break;
    }
    case RAFT_APPEND_ENTRIES: {
      auto& a = m.append_entries;
      a.version = std::uint8_t(r.u(1)), a.term = r.u(8), a.prev_log_index = r.u(8);
      a.prev_log_term = r.u(8), a.leader_commit = r.u(8);
      // raft asserts prev_log_term != 0 whenever prev_log_index != 0: reject such a frame.
      if (r.bad || (a.prev_log_index != 0) != (a.prev_log_term != 0)) return std::nullopt;
      if (!decode_entries(r, a)) return std::nullopt;
      break;
    }
    case RAFT_APPEND_ENTRIES_RESULT: {
      auto& a = m.append_entries_result;
      a.version = std::uint8_t(r.u(1)), a.term = r.u(8), a.rejected = r.u(8);
      a.last_log_index = r.u(8), a.features = std::uint16_t(r.u(2));
      a.capacity = std::uint16_t(r.u(2));
      break;
    }
    case RAFT_TIMEOUT_NOW: {
      auto& t = m.timeout_now;
      t.version = std::uint8_t(r.u(1)), t.term = r.u(8), t.last_log_index = r.u(8);
      t.last_log_term = r.u(8);
      break;
    }
    case RAFT_INSTALL_SNAPSHOT: {
      auto& is = m.install_snapshot;
      is.version = std::uint8_t(r.u(1)), is.term = r.u(8), is.last_index = r.u(8);
      is.last_term = r.u(8), is.conf_index = r.u(8);
      const std::uint64_t conf_len = r.u(4);
      // raft asserts both are set; the configuration must decode.
      if (r.bad || is.last_index == 0 || is.last_term == 0 || conf_len == 0 || conf_len > r.left())
        return std::nullopt;
      raft_buffer cb{const_cast<std::uint8_t*>(r.b.data() + r.at), std::size_t(conf_len)};
      if (raft_configuration_decode(&cb, &is.conf) != 0) return std::nullopt;
      r.at += conf_len;
      d.snapshot_offset = r.u(8);
      const std::uint64_t len = r.u(8);
      if (r.bad || len != r.left()) {
        raft_configuration_close(&is.conf);
        return std::nullopt;
      }
      is.data.base = raft_malloc(len == 0 ? 1 : len);
      is.data.len = len;
      if (is.data.base == nullptr) {
        raft_configuration_close(&is.conf);
        return std::nullopt;
      }
      if (len > 0) std::memcpy(is.data.base, r.b.data() + r.at, len);
      r.at += len;
      break;
    }
    default:
      return std::nullopt;
  }
  m.type = raft_message_type(type);
  if (r.bad || r.left() != 0) {
    drop_decoded(m);
    return std::nullopt;
  }
  return d;
}

void drop_decoded(raft_message& m) {
  if (m.type == RAFT_INSTALL_SNAPSHOT) {
    raft_configuration_close(&m.install_snapshot.conf);
    raft_free(m.install_snapshot.data.base);
    m.install_snapshot.data = {};
    return;
  }
  if (m.type == RAFT_APPEND_ENTRIES && m.append_entries.n_entries > 0) {
    raft_free(m.append_entries.entries[0].batch);
    raft_free(m.append_entries.entries);
    m.append_entries.entries = nullptr;
    m.append_entries.n_entries = 0;
  }
}

}  // namespace repl
