#pragma once
// Messages that travel between shards over the SPSC rings.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace core {

// A published message shared (read-only) by every shard that delivers it.
struct shared_msg {
  std::string subject;
  std::string reply;
  std::string headers;
  std::string payload;
  bool no_responders = false;  // the publisher takes 503 statuses (for internal handlers)
  std::string matched;         // set when receivers are shown another subject: what routes carry
};

struct delivery_target {
  std::uint64_t conn_id = 0;
  std::string sid;
};

struct shard_msg {
  enum class kind : std::uint8_t { new_conn, sub_add, sub_del, conn_gone, deliver, sub_ack };
  kind k = kind::deliver;
  int fd = -1;                 // new_conn
  std::uint32_t from = 0;      // sending shard
  std::uint64_t seq = 0;       // sub_add/sub_del/conn_gone: broadcast seq; sub_ack: acked seq
  std::uint64_t conn_id = 0;
  std::string sid;
  std::string subject;
  std::string queue;
  std::uint32_t account = 0;   // sub_add: the subscriber's account
  bool via_route = false;                 // sub_add: a route's interest
  std::uint32_t weight = 1;               // sub_add
  bool announce = false;                  // sub_add: an internal subscription announced to routes
  std::shared_ptr<const shared_msg> msg;  // deliver
  std::vector<delivery_target> targets;   // deliver
};

}  // namespace core
