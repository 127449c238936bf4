#include "src/js/group_host.h"

#include "src/base/go_text.h"
#include "src/base/rng.h"
#include "src/js/event_json.h"

namespace js {

std::string random_name(std::size_t n) {
  static thread_local base::rng rng(static_cast<std::uint64_t>(base::read_clock(CLOCK_REALTIME)) ^ 0x5bd1e995u);  // one per owner thread
  static constexpr char kAlpha[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s += kAlpha[rng.below(62)];
  return s;
}

std::string event_json(std::string_view type, const ojson& body, std::string_view domain, std::int64_t now_ns) {
  ojson j;
  j["type"] = type.starts_with("io.") ? std::string(type) : "io.nats.jetstream.advisory.v1." + std::string(type);
  j["id"] = random_name(22);
  j["timestamp"] = base::rfc3339_nano(now_ns);
  for (auto it = body.cbegin(); it != body.cend(); ++it) j[it.key()] = it.value();
  if (!domain.empty()) j["domain"] = std::string(domain);
  return j.dump();
}

void group_host::publish_event(const std::string& subject, std::string_view type, const ojson& body) {
  if (!has_interest(subject)) return;
  publish(subject, "", "", event_json(type, body, domain(), now()));
}

}  // namespace js
