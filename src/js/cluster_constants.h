// Constants every cluster_*.cc of src/js shares (one place, not a copy per file).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace js::cluster {

constexpr std::uint64_t kMetaGroup = 1;                 // repl::kMetaGroup (src/repl/repl_host.h)
constexpr std::int64_t kAnswerWindowNs = 10'000'000'000;  // how long a request's reply waits
constexpr int kMaxHops = 2;                             // forwards of one API request

// What a group id is derived from for an account's stream (or "stream/consumer"): the name
// alone in the global account (so existing groups keep their ids), else account NUL name.
inline std::string group_key(const std::string& account, const std::string& name) {
  if (account == "$G") return name;
  std::string k = account;
  k.push_back('\0');
  k += name;
  return k;
}

// A key of the meta log's table of R1 streams (meta_state::r1_streams): the name in the
// global account, "account.name" in another (a stream name has no '.').
inline std::string r1_key(const std::string& account, std::string_view name) {
  if (account == "$G") return std::string(name);
  return account + "." + std::string(name);
}
// The stream name of `key` when it is `account`'s, else "".
inline std::string_view r1_name_in(const std::string& account, std::string_view key) {
  const auto dot = key.rfind('.');
  if (dot == std::string_view::npos) return account == "$G" ? key : std::string_view();
  return key.substr(0, dot) == account ? key.substr(dot + 1) : std::string_view();
}

// The subject prefix of the cluster's requests to `server` ($PG.JSC.<server>.<hops>.<what>).
inline std::string prefix_of(const std::string& server) { return "$PG.JSC." + server + "."; }

}  // namespace js::cluster
