#pragma once
// The route protocol (server <-> server) as nats-server 2.9 speaks it, as a pure function
// over a byte span like proto::parse_client: RS+/RS- (interest, with the account and an
// optional queue and weight), RMSG and HMSG (a routed message with the account, an optional
// reply and the queue groups it was chosen for), -ERR, and the ops routes share with clients
// (INFO, CONNECT, PING, PONG, +OK), which parse_client handles.
#include <cstdint>
#include <string_view>
#include <utility>

#include "src/proto/parser.h"

namespace core {

enum class route_op_kind : std::uint8_t { sub, unsub, msg, err, client_op };

struct route_op {
  route_op_kind kind = route_op_kind::client_op;
  std::string_view account;   // RS+/RS-/RMSG/HMSG
  std::string_view subject;
  std::string_view queue;     // RS+/RS-: empty for plain interest
  std::int32_t weight = 0;    // RS+ with a queue: members behind it on the remote server
  std::string_view reply;     // RMSG/HMSG (may be empty)
  std::string_view queues;    // RMSG/HMSG: space-separated queue names (empty: plain delivery)
  std::string_view headers;   // HMSG
  std::string_view payload;   // RMSG/HMSG
  std::string_view err;       // -ERR text (without quotes)
  proto::client_op op;        // client_op: INFO/CONNECT/PING/PONG/+OK
};

struct route_parse_result {
  proto::parse_status status = proto::parse_status::need_more;
  std::size_t consumed = 0;
  std::size_t needed = 0;
  proto::parse_error error = proto::parse_error::none;
  route_op op;
};

route_parse_result parse_route(std::string_view buf, const proto::parser_limits& limits) noexcept;

// Each queue name of a RMSG/HMSG queue list.
template <typename F>
void for_each_queue(std::string_view list, F&& f) {
  std::size_t i = 0;
  while (i < list.size()) {
    while (i < list.size() && list[i] == ' ') ++i;
    std::size_t j = i;
    while (j < list.size() && list[j] != ' ') ++j;
    if (j > i) f(list.substr(i, j - i));
    i = j;
  }
}

// A routed message's reply split into (reply, subject its receivers see): nats-server
// routes a JetStream delivery on its inbox with "@<subject>" after the 9-token ack reply
// ("$JS.ACK...@orders.created"); (reply, "") when there is none.
std::pair<std::string_view, std::string_view> split_routed_delivery(std::string_view reply);

}  // namespace core
