#include "src/js/group_host.h"

#include "src/base/go_text.h"
#include "src/base/rng.h"

namespace js {

std::string random_name(std::size_t n) {
  static thread_local base::rng rng(static_cast<std::uint64_t>(base::read_clock(CLOCK_REALTIME)) ^ 0x5bd1e995u);  // one per owner thread
  static constexpr char kAlpha[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s += kAlpha[rng.below(62)];
  return s;
}

void group_host::publish_event(const std::string& subject, std::string_view type, const ojson& body) {
  if (!has_interest(subject)) return;
  ojson j;
  j["type"] = type.starts_with("io.") ? std::string(type) : "io.nats.jetstream.advisory.v1." + std::string(type);
  j["id"] = random_name(22);
  j["timestamp"] = base::rfc3339_nano(now());
  for (auto it = body.cbegin(); it != body.cend(); ++it) j[it.key()] = it.value();
  if (!domain().empty()) j["domain"] = domain();
  publish(subject, "", "", j.dump());
}

}  // namespace js
