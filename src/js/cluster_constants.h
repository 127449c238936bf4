// Constants every cluster_*.cc of src/js shares (one place, not a copy per file).
#pragma once

#include <cstdint>
#include <string>

namespace js::cluster {

constexpr std::uint64_t kMetaGroup = 1;                 // repl::kMetaGroup (src/repl/repl_host.h)
constexpr const char* kAccount = "$G";                  // one account until accounts are clustered
constexpr std::int64_t kAnswerWindowNs = 10'000'000'000;  // how long a request's reply waits
constexpr int kMaxHops = 2;                             // forwards of one API request

// The subject prefix of the cluster's requests to `server` ($PG.JSC.<server>.<hops>.<what>).
inline std::string prefix_of(const std::string& server) { return "$PG.JSC." + server + "."; }

}  // namespace js::cluster
