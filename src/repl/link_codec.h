#pragma once
// The byte format of a replication connection (repl_link): a hello line each way, then
// length-prefixed messages. Pure functions over buffers, so the handshake and the decoder are
// unit-tested and fuzzed without sockets.
//   hello:   "PGREPL <version> <server name> <cluster name>\r\n"   (at most kMaxHelloLine bytes)
//   message: u32 length (of kind + payload) | u8 kind | payload        (little-endian)
// Kinds: raft (one raft_codec frame, any group), view (the sender's meta membership view, for
// the bootstrap rule in meta_bootstrap.h), stepdown (u64 group: the receiver, if it leads that
// group, hands leadership on; how a follower forwards $JS.API.META.LEADER.STEPDOWN).
// A distinct first line: nothing here can be mistaken for the route protocol (INFO/CONNECT).
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace repl {

inline constexpr std::string_view kLinkMagic = "PGREPL";
inline constexpr std::uint32_t kLinkVersion = 1;
inline constexpr std::size_t kMaxHelloLine = 512;
inline constexpr std::uint32_t kMaxLinkMessage = 64u << 20;  // a larger length is a bad peer

struct link_hello {
  std::uint32_t version = kLinkVersion;
  std::string server_name;
  std::string cluster;
  bool operator==(const link_hello&) const = default;
};

enum class link_kind : std::uint8_t { raft = 1, view = 2, stepdown = 3 };

enum class link_parse { ok, need_more, error };

// A name on the link: 1-255 bytes, printable ASCII without spaces.
bool valid_link_name(std::string_view name);

std::string encode_hello(const link_hello& h);
// On ok, `consumed` is the line's length (with CRLF).
link_parse parse_hello(std::span<const std::uint8_t> buf, link_hello& out, std::size_t& consumed);

void append_link_message(std::vector<std::uint8_t>& out, link_kind kind,
                         std::span<const std::uint8_t> payload);

struct link_message {
  link_kind kind = link_kind::raft;
  std::span<const std::uint8_t> payload;  // points into the parsed buffer
};
// Unknown kinds are errors: both ends run the same version (the hello says which).
link_parse parse_link_message(std::span<const std::uint8_t> buf, link_message& out,
                              std::size_t& consumed);

// The view a server advertises: `frozen` once it belongs to a meta group (members are then
// the group's voters, sorted), else the servers it is linked to plus itself, sorted.
struct membership_view {
  bool frozen = false;
  std::vector<std::string> members;
  bool operator==(const membership_view&) const = default;
};
std::vector<std::uint8_t> encode_view(const membership_view& v);
bool decode_view(std::span<const std::uint8_t> payload, membership_view& out);

std::vector<std::uint8_t> encode_group_id(std::uint64_t group);
bool decode_group_id(std::span<const std::uint8_t> payload, std::uint64_t& group);

}  // namespace repl
