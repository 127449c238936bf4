#include "src/repl/meta_bootstrap.h"

#include <algorithm>

namespace repl {

membership_view own_view(const std::string& self, const std::vector<std::string>& linked) {
  membership_view v;
  v.members = linked;
  v.members.push_back(self);
  std::sort(v.members.begin(), v.members.end());
  v.members.erase(std::unique(v.members.begin(), v.members.end()), v.members.end());
  return v;
}

std::optional<std::vector<std::string>> decide_bootstrap(const bootstrap_input& in) {
  // (1) Join a group that already lists us; the smallest such list when peers disagree, so
  // the choice does not depend on the order views arrived in.
  std::optional<std::vector<std::string>> adopt;
  for (const std::string& p : in.linked) {
    auto it = in.views.find(p);
    if (it == in.views.end() || !it->second.frozen) continue;
    const auto& m = it->second.members;
    if (!std::binary_search(m.begin(), m.end(), in.self)) continue;
    if (!adopt || m < *adopt) adopt = m;
  }
  if (adopt) return adopt;
  // (2) Everyone we see sees the same servers, and that has held for a while.
  const membership_view mine = own_view(in.self, in.linked);
  if (mine.members.size() < std::max<std::size_t>(2, in.min_size)) return std::nullopt;
  if (in.now_ms < in.view_since_ms + in.settle_ms) return std::nullopt;
  for (const std::string& p : mine.members) {
    if (p == in.self) continue;
    auto it = in.views.find(p);
    if (it == in.views.end() || it->second.frozen || it->second.members != mine.members)
      return std::nullopt;
  }
  return mine.members;
}

std::optional<std::vector<std::string>> decide_join(const bootstrap_input& in) {
  std::optional<std::vector<std::string>> join;
  for (const std::string& p : in.linked) {
    auto it = in.views.find(p);
    if (it == in.views.end() || !it->second.frozen) continue;
    const auto& m = it->second.members;
    if (m.empty() || std::binary_search(m.begin(), m.end(), in.self)) continue;
    if (!join || m < *join) join = m;
  }
  return join;
}

std::uint64_t server_raft_id(const std::string& name) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h == 0 ? 1 : h;
}

}  // namespace repl
