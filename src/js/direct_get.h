#pragma once
// The direct get request body (JSApiMsgGetRequest on $JS.API.DIRECT.GET.<stream>), decoded as
// nats-server's Go decoder reads it: a field of the wrong type or out of its Go range (a negative
// seq, 1.5 in batch, ...) makes the request malformed.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/core/service.h"
#include "storage/store.h"

namespace js {

struct direct_request {
  std::uint64_t seq = 0;
  std::string last_by, next_by;
  std::int64_t batch = 0, max_bytes = 0;
  std::vector<std::string> multi_last;
  std::uint64_t up_to_seq = 0;
  std::optional<std::int64_t> start_time, up_to_time;
  bool no_hdr = false;
};

// Fills `r` and `keys` (the non-null fields present, in document order); on failure returns the
// status line text nats-server answers with ("408 Malformed Request").
std::optional<std::string> decode_direct_request(std::string_view body, direct_request& r,
                                                 std::vector<std::string>& keys);

// Answers one direct get request ($JS.API.DIRECT.GET.<stream>[.<subject>], direct_get.cc) from
// `st` as stream `stream_name`'s responder: each message or status goes through `send`
// (headers, payload) to the request's reply subject. A standalone stream and a replica of a
// replicated one (cluster_direct_get.cc) answer alike.
using direct_send = std::function<void(std::string_view headers, std::string_view payload)>;
void serve_direct_get(std::string_view stream_name, storage::stream_store& st, const core::inbound_msg& m,
                      const direct_send& send);

}  // namespace js
