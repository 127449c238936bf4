#include "src/js/snapshot_archive.h"

#include "src/base/crc32c.h"

namespace js {

namespace {
constexpr std::string_view kMagic = "PGSNAP1\n";

template <typename T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  for (std::size_t i = 0; i < sizeof(T); ++i) b[i] = static_cast<char>((static_cast<std::uint64_t>(v) >> (8 * i)) & 0xff);
  out.append(b, sizeof(T));
}

template <typename T>
bool get(std::string_view& in, T& v) {
  if (in.size() < sizeof(T)) return false;
  std::uint64_t x = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) x |= std::uint64_t(static_cast<unsigned char>(in[i])) << (8 * i);
  v = static_cast<T>(x);
  in.remove_prefix(sizeof(T));
  return true;
}

bool get_bytes(std::string_view& in, std::string& out) {
  std::uint32_t n = 0;
  if (!get(in, n) || in.size() < n) return false;
  out.assign(in.data(), n);
  in.remove_prefix(n);
  return true;
}
}  // namespace

snapshot_writer::snapshot_writer() { _out.append(kMagic); }

void snapshot_writer::record(char type, std::string_view body) {
  _out.push_back(type);
  put<std::uint32_t>(_out, static_cast<std::uint32_t>(body.size()));
  _out.append(body);
  ++_count;
}

void snapshot_writer::message(const storage::stored_msg& m) {
  std::string b;
  b.reserve(36 + m.subject.size() + m.headers.size() + m.payload.size());
  put<std::uint64_t>(b, m.seq);
  put<std::int64_t>(b, m.ts);
  put<std::int64_t>(b, m.ttl);
  put<std::uint32_t>(b, static_cast<std::uint32_t>(m.subject.size()));
  b.append(m.subject);
  put<std::uint32_t>(b, static_cast<std::uint32_t>(m.headers.size()));
  b.append(m.headers);
  b.append(m.payload);
  record('M', b);
}

std::string snapshot_writer::finish() {
  const std::uint32_t crc = base::crc32c(_out.data(), _out.size());
  std::string end;
  put<std::uint32_t>(end, _count);
  put<std::uint32_t>(end, crc);
  _out.push_back('E');
  put<std::uint32_t>(_out, static_cast<std::uint32_t>(end.size()));
  _out.append(end);
  return std::move(_out);
}

std::optional<snapshot_contents> read_snapshot(std::string_view bytes, std::string& error) {
  if (bytes.size() < kMagic.size() || bytes.substr(0, kMagic.size()) != kMagic) {
    error = bytes.size() < kMagic.size() && kMagic.starts_with(bytes) ? "snapshot truncated" : "snapshot corrupt: not a Peregrine snapshot";
    return std::nullopt;
  }
  snapshot_contents out;
  std::string_view in = bytes.substr(kMagic.size());
  std::uint32_t count = 0;
  bool have_stream = false;
  while (true) {
    if (in.empty()) {
      error = "snapshot truncated";
      return std::nullopt;
    }
    const std::size_t at = bytes.size() - in.size();
    const char type = in[0];
    std::string_view rest = in.substr(1);
    std::uint32_t len = 0;
    if (!get(rest, len) || rest.size() < len) {
      error = "snapshot truncated";
      return std::nullopt;
    }
    std::string_view body = rest.substr(0, len);
    in = rest.substr(len);
    if (type == 'E') {
      std::uint32_t n = 0, crc = 0;
      if (!get(body, n) || !get(body, crc) || !body.empty() || !in.empty()) {
        error = "snapshot corrupt: bad end record";
        return std::nullopt;
      }
      if (crc != base::crc32c(bytes.data(), at) || n != count) {
        error = "snapshot corrupt: checksum mismatch";
        return std::nullopt;
      }
      break;
    }
    ++count;
    if (type == 'S' || type == 'C') {
      auto j = nlohmann::ordered_json::parse(body, nullptr, false);
      if (j.is_discarded() || !j.is_object() || !j.contains("config")) {
        error = "snapshot corrupt: bad metadata record";
        return std::nullopt;
      }
      if (type == 'S') {
        out.stream = std::move(j);
        have_stream = true;
      } else {
        out.consumers.push_back(std::move(j));
      }
    } else if (type == 'M') {
      storage::stored_msg m;
      if (!get(body, m.seq) || !get(body, m.ts) || !get(body, m.ttl) || !get_bytes(body, m.subject) ||
          !get_bytes(body, m.headers)) {
        error = "snapshot corrupt: bad message record";
        return std::nullopt;
      }
      m.payload.assign(body.data(), body.size());
      if (!out.messages.empty() && m.seq <= out.messages.back().seq) {
        error = "snapshot corrupt: messages out of order";
        return std::nullopt;
      }
      out.messages.push_back(std::move(m));
    } else {
      error = "snapshot corrupt: unknown record";
      return std::nullopt;
    }
  }
  if (!have_stream) {
    error = "snapshot corrupt: no stream record";
    return std::nullopt;
  }
  return out;
}

nlohmann::ordered_json consumer_state_json(const storage::consumer_state& s) {
  nlohmann::ordered_json j;
  j["delivered"] = {{"consumer_seq", s.delivered.consumer}, {"stream_seq", s.delivered.stream}};
  j["ack_floor"] = {{"consumer_seq", s.ack_floor.consumer}, {"stream_seq", s.ack_floor.stream}};
  auto pending = nlohmann::ordered_json::array();
  for (const auto& [seq, p] : s.pending) pending.push_back({seq, p.consumer_seq, p.ts});
  j["pending"] = pending;
  auto redelivered = nlohmann::ordered_json::array();
  for (const auto& [seq, n] : s.redelivered) redelivered.push_back({seq, n});
  j["redelivered"] = redelivered;
  return j;
}

std::optional<storage::consumer_state> consumer_state_from_json(const nlohmann::ordered_json& j) {
  try {
    storage::consumer_state s;
    s.delivered = {j.at("delivered").at("consumer_seq").get<std::uint64_t>(),
                   j.at("delivered").at("stream_seq").get<std::uint64_t>()};
    s.ack_floor = {j.at("ack_floor").at("consumer_seq").get<std::uint64_t>(),
                   j.at("ack_floor").at("stream_seq").get<std::uint64_t>()};
    for (const auto& p : j.at("pending"))
      s.pending[p.at(0).get<std::uint64_t>()] = {p.at(1).get<std::uint64_t>(), p.at(2).get<std::int64_t>()};
    for (const auto& r : j.at("redelivered")) s.redelivered[r.at(0).get<std::uint64_t>()] = r.at(1).get<std::uint64_t>();
    return s;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

}  // namespace js
