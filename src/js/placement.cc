#include "src/js/placement.h"

#include <algorithm>

namespace js {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

bool has_all_tags(const placement_candidate& c, const std::vector<std::string>& want) {
  for (const auto& t : want) {
    const std::string lt = lower(t);
    if (std::none_of(c.tags.begin(), c.tags.end(),
                     [&](const std::string& have) { return lower(have) == lt; }))
      return false;
  }
  return true;
}

}  // namespace

placement_result place_replicas(const placement_request& req,
                                const std::vector<placement_candidate>& candidates) {
  const std::string& cluster = req.cluster.empty() ? req.default_cluster : req.cluster;
  std::vector<const placement_candidate*> fit;
  bool offline = false, untagged = false;
  for (const auto& c : candidates) {
    if (!cluster.empty() && c.cluster != cluster) continue;
    if (std::find(req.exclude.begin(), req.exclude.end(), c.name) != req.exclude.end()) continue;
    if (c.offline) {
      offline = true;
      continue;
    }
    if (!has_all_tags(c, req.tags)) {
      untagged = true;
      continue;
    }
    fit.push_back(&c);
  }
  placement_result r;
  if (req.replicas == 0 || fit.size() < req.replicas) {
    std::string text = "no suitable peers for placement";
    if (offline) text += ", peer offline";
    if (untagged) {
      text += ", tags not matched [";
      for (std::size_t i = 0; i < req.tags.size(); ++i)
        text += (i ? ", '" : "'") + req.tags[i] + "'";
      text += "]";
    }
    r.error = make_error(err::no_suitable_peers, text);
    return r;
  }
  std::sort(fit.begin(), fit.end(), [](const placement_candidate* a, const placement_candidate* b) {
    return a->assets != b->assets ? a->assets < b->assets : a->name < b->name;
  });
  for (unsigned i = 0; i < req.replicas; ++i) r.peers.push_back(fit[i]->name);
  return r;
}

}  // namespace js
