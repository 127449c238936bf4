#include "src/js/meta_state.h"

#include <algorithm>
#include <type_traits>

namespace js {

namespace re = repl_entries;

bool meta_state::member(const std::vector<std::string>& peers) const {
  return std::find(peers.begin(), peers.end(), _self) != peers.end();
}

const meta_state::stream_entry* meta_state::find(const std::string& account,
                                                 const std::string& stream) const {
  auto it = _streams.find({account, stream});
  return it == _streams.end() ? nullptr : &it->second;
}

const std::vector<std::string>& meta_state::tags_of(const std::string& server) const {
  static const std::vector<std::string> none;
  auto it = _tags.find(server);
  return it == _tags.end() ? none : it->second;
}

std::vector<re::r1_stream> meta_state::r1_of(const std::string& server) const {
  std::vector<re::r1_stream> out;
  for (const auto& [name, h] : _r1)
    if (h.server == server) out.push_back({name, h.subjects});
  return out;
}

std::uint64_t meta_state::assets_on(const std::string& server) const {
  std::uint64_t n = 0;
  auto on = [&](const std::vector<std::string>& peers) {
    return peers.size() > 1 && std::find(peers.begin(), peers.end(), server) != peers.end();
  };
  for (const auto& [k, s] : _streams) {
    n += on(s.assignment.peers) ? 1 : 0;
    for (const auto& [name, c] : s.consumers) n += on(c.peers) ? 1 : 0;
  }
  return n;
}

void meta_state::take_consumers(stream_entry& s, const std::vector<re::consumer_assign>& list,
                                std::vector<meta_change>& mine) {
  for (const auto& c : list) {
    s.consumers[c.name] = c;
    if (member(c.peers)) mine.push_back({meta_change::kind::create_consumer, {}, c});
  }
}

bool meta_state::apply(std::span<const std::uint8_t> data, std::vector<meta_change>& mine) {
  auto op = re::decode_meta(data);
  if (!op) return false;
  std::visit(
      [&](auto& v) {
        using T = std::decay_t<decltype(v)>;
        using kind = meta_change::kind;
        if constexpr (std::is_same_v<T, re::stream_assign>) {
          // A repeated assignment (a retried create) changes nothing.
          auto [it, fresh] = _streams.try_emplace({v.account, v.name});
          if (!fresh) return;
          it->second.assignment = v;
          it->second.assignment.consumers.clear();
          if (member(v.peers)) mine.push_back({kind::create_stream, it->second.assignment, {}});
          take_consumers(it->second, v.consumers, mine);
        } else if constexpr (std::is_same_v<T, re::stream_update>) {
          auto it = _streams.find({v.account, v.name});
          if (it == _streams.end()) return;
          const bool was = member(it->second.assignment.peers), is = member(v.peers);
          // A scale makes a new group (a config update keeps it, and its seed_from too).
          const bool scale = !v.seed_from.empty() && v.group_id != it->second.assignment.group_id;
          re::stream_assign next = v;
          next.consumers.clear();
          it->second.assignment = next;
          if (was && is) mine.push_back({kind::update_stream, next, {}});
          if (!was && is) mine.push_back({kind::create_stream, next, {}});
          if (was && !is) mine.push_back({kind::remove_stream, next, {}});
          // A scale: the consumers move into the new groups it lists (their old groups go
          // with the stream's old group on every server).
          if (scale) {
            it->second.consumers.clear();
            take_consumers(it->second, v.consumers, mine);
          }
        } else if constexpr (std::is_same_v<T, re::stream_remove>) {
          auto it = _streams.find({v.account, v.name});
          if (it == _streams.end()) return;
          if (member(it->second.assignment.peers))
            mine.push_back({kind::remove_stream, it->second.assignment, {}});
          _streams.erase(it);
        } else if constexpr (std::is_same_v<T, re::consumer_assign>) {
          auto it = _streams.find({v.account, v.stream});
          if (it == _streams.end()) return;  // its stream went first: nothing to place
          auto [c, fresh] = it->second.consumers.try_emplace(v.name, v);
          if (fresh && member(v.peers)) mine.push_back({kind::create_consumer, {}, v});
        } else if constexpr (std::is_same_v<T, re::consumer_update>) {
          auto it = _streams.find({v.account, v.stream});
          if (it == _streams.end()) return;
          auto c = it->second.consumers.find(v.name);
          if (c == it->second.consumers.end()) return;  // removed meanwhile
          c->second.config_json = v.config_json;
          if (member(c->second.peers)) mine.push_back({kind::update_consumer, {}, c->second});
        } else if constexpr (std::is_same_v<T, re::server_remove>) {
          _removed.insert(v.name);
          _tags.erase(v.name);
          std::erase_if(_r1, [&](const auto& kv) { return kv.second.server == v.name; });
        } else if constexpr (std::is_same_v<T, re::r1_streams>) {
          // The server's whole set: what it no longer lists is gone. A name another server
          // reported too is the later report's (a create racing on two servers).
          std::erase_if(_r1, [&](const auto& kv) { return kv.second.server == v.server; });
          for (const auto& st : v.streams) _r1[st.name] = r1_home{v.server, st.subjects};
          _tags[v.server] = v.tags;
        } else {
          auto it = _streams.find({v.account, v.stream});
          if (it == _streams.end()) return;
          auto c = it->second.consumers.find(v.name);
          if (c == it->second.consumers.end()) return;
          if (member(c->second.peers)) mine.push_back({kind::remove_consumer, {}, c->second});
          it->second.consumers.erase(c);
        }
      },
      *op);
  return true;
}

}  // namespace js
