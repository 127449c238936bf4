#pragma once
// The direct get request body (JSApiMsgGetRequest on $JS.API.DIRECT.GET.<stream>), decoded as
// nats-server's Go decoder reads it: a field of the wrong type or out of its Go range (a negative
// seq, 1.5 in batch, ...) makes the request malformed.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

}  // namespace js
