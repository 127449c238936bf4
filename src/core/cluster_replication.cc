#include "src/core/cluster_replication.h"

#include <sodium.h>
#include <unistd.h>

namespace core {

void cluster_replication::adopt_connection(int fd) { ::close(fd); }

std::string server_name_hash(const std::string& name) {
  unsigned char d[crypto_hash_sha256_BYTES];
  crypto_hash_sha256(d, reinterpret_cast<const unsigned char*>(name.data()), name.size());
  static const char* kDigits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  std::string out;
  for (int i = 0; i < 8; ++i) out += kDigits[d[i] % 62];  // nats-server's getHash: a digit per byte
  return out;
}

nlohmann::ordered_json meta_cluster_json(const meta_status& m) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  if (!m.cluster.empty()) j["name"] = m.cluster;
  if (!m.leader.empty()) {
    j["leader"] = m.leader;
    j["peer"] = server_name_hash(m.leader);
  }
  if (m.self_leader && !m.replicas.empty()) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& r : m.replicas) {
      nlohmann::ordered_json p;
      p["name"] = r.name;
      p["current"] = r.current;
      if (r.offline) p["offline"] = true;
      p["active"] = r.active_ns;
      if (r.lag) p["lag"] = r.lag;
      p["peer"] = server_name_hash(r.name);
      list.push_back(std::move(p));
    }
    j["replicas"] = std::move(list);
  }
  j["cluster_size"] = m.cluster_size;
  return j;
}

}  // namespace core
