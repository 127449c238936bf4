// The meta table's snapshot: the table written as the meta entries that would build it from
// nothing (a stream_assign per stream carrying its consumers, a server_remove per removed
// server, an r1_streams per reporting server), each length-prefixed, after a version byte.
// Restoring replays them into a fresh table, then compares it with the old one for this
// server's replicas.
#include "src/js/meta_state.h"

namespace js {

namespace re = repl_entries;

namespace {

constexpr std::uint8_t kSnapshotVersion = 1;

void put_u32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(std::uint8_t(v >> (8 * i)));
}

void put_op(std::vector<std::uint8_t>& out, const re::meta_op& op) {
  const std::vector<std::uint8_t> bytes = re::encode(op);
  put_u32(out, std::uint32_t(bytes.size()));
  out.insert(out.end(), bytes.begin(), bytes.end());
}

}  // namespace

std::vector<std::uint8_t> meta_state::snapshot() const {
  std::vector<std::uint8_t> out{kSnapshotVersion};
  for (const auto& [k, s] : _streams) {
    re::stream_assign a = s.assignment;
    a.consumers.clear();
    for (const auto& [name, c] : s.consumers) a.consumers.push_back(c);
    put_op(out, a);
  }
  for (const auto& name : _removed) put_op(out, re::server_remove{name});
  std::set<std::string> reporting;
  for (const auto& [name, h] : _r1) reporting.insert(h.server);
  for (const auto& [server, tags] : _tags) reporting.insert(server);
  for (const auto& server : reporting) put_op(out, re::r1_streams{server, r1_of(server), tags_of(server)});
  return out;
}

bool meta_state::restore(std::span<const std::uint8_t> data, std::vector<meta_change>& mine) {
  if (data.empty() || data[0] != kSnapshotVersion) return false;
  meta_state next(_self);
  std::vector<meta_change> ignored;
  for (std::size_t at = 1; at < data.size();) {
    if (data.size() - at < 4) return false;
    std::uint32_t len = 0;
    for (int i = 0; i < 4; ++i) len |= std::uint32_t(data[at + std::size_t(i)]) << (8 * i);
    at += 4;
    if (data.size() - at < len || !next.apply(data.subspan(at, len), ignored)) return false;
    at += len;
  }
  using kind = meta_change::kind;
  // Streams first: a new group (a scale) drops the old one's consumers with it.
  for (const auto& [k, old] : _streams) {
    const stream_entry* now = next.find(k.first, k.second);
    if (member(old.assignment.peers) && (!now || !member(now->assignment.peers)))
      mine.push_back({kind::remove_stream, old.assignment, {}});
  }
  for (const auto& [k, now] : next._streams) {
    if (!member(now.assignment.peers)) continue;
    const stream_entry* old = find(k.first, k.second);
    if (!old || !member(old->assignment.peers)) mine.push_back({kind::create_stream, now.assignment, {}});
    else if (!(old->assignment == now.assignment)) mine.push_back({kind::update_stream, now.assignment, {}});
  }
  auto consumer_in = [](const meta_state& table, const key& k, const std::string& name) -> const re::consumer_assign* {
    const stream_entry* s = table.find(k.first, k.second);
    if (!s) return nullptr;
    auto it = s->consumers.find(name);
    return it == s->consumers.end() ? nullptr : &it->second;
  };
  for (const auto& [k, old] : _streams)
    for (const auto& [name, c] : old.consumers) {
      const re::consumer_assign* now = consumer_in(next, k, name);
      if (member(c.peers) && (!now || !member(now->peers) || now->group_id != c.group_id))
        mine.push_back({kind::remove_consumer, {}, c});
    }
  for (const auto& [k, now] : next._streams)
    for (const auto& [name, c] : now.consumers) {
      if (!member(c.peers)) continue;
      const re::consumer_assign* old = consumer_in(*this, k, name);
      if (!old || !member(old->peers) || old->group_id != c.group_id) mine.push_back({kind::create_consumer, {}, c});
      else if (old->config_json != c.config_json) mine.push_back({kind::update_consumer, {}, c});
    }
  *this = std::move(next);
  return true;
}

}  // namespace js
