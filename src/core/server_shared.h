#pragma once
// What every shard reads about the server: options, identity and the INFO template.
// Written once before the shards start; read-only afterwards (counters are atomic).
#include <atomic>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "src/core/options.h"

namespace core {

struct server_shared {
  server_options opts;
  std::string server_id;
  std::string server_name;
  nlohmann::ordered_json info;  // INFO fields common to every client
  bool auth_required = false;
  std::uint32_t shard_count = 1;
  std::atomic<int> connections{0};
  std::atomic<std::uint64_t> slow_consumers{0};
  std::atomic<std::uint64_t> in_msgs{0};

  // The INFO line for one client (adds client_id and client_ip, as nats-server does).
  std::string info_line(std::uint64_t client_id, const std::string& client_ip) const;
};

}  // namespace core
