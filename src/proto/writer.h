#pragma once
// Encoders for server -> client protocol lines, appending to an outbound buffer.
#include <cstdint>
#include <string>
#include <string_view>

namespace proto {

// MSG <subject> <sid> [reply] <#bytes>\r\n<payload>\r\n
void append_msg(std::string& out, std::string_view subject, std::string_view sid,
                std::string_view reply, std::string_view payload);
// MSG <subject> <sid> [reply] <#bytes>\r\n alone: the payload and its \r\n follow from elsewhere.
void append_msg_line(std::string& out, std::string_view subject, std::string_view sid,
                     std::string_view reply, std::size_t payload_size);
// HMSG <subject> <sid> [reply] <#hdr> <#total>\r\n<headers><payload>\r\n
void append_hmsg(std::string& out, std::string_view subject, std::string_view sid,
                 std::string_view reply, std::string_view headers, std::string_view payload);
// -ERR '<text>'\r\n
void append_err(std::string& out, std::string_view text);
void append_info(std::string& out, std::string_view json);

inline constexpr std::string_view kPing = "PING\r\n";
inline constexpr std::string_view kPong = "PONG\r\n";
inline constexpr std::string_view kOk = "+OK\r\n";

// The exact -ERR texts nats-server sends.
namespace err_text {
inline constexpr std::string_view unknown_op = "Unknown Protocol Operation";
inline constexpr std::string_view max_control_line = "maximum control line exceeded";
inline constexpr std::string_view max_payload = "Maximum Payload Violation";
inline constexpr std::string_view auth_violation = "Authorization Violation";
inline constexpr std::string_view auth_timeout = "Authentication Timeout";
inline constexpr std::string_view stale = "Stale Connection";
inline constexpr std::string_view bad_protocol = "invalid client protocol";
inline constexpr std::string_view no_responders_headers = "no responders requires headers support";
inline constexpr std::string_view invalid_subject = "Invalid Subject";
inline constexpr std::string_view invalid_publish_subject = "Invalid Publish Subject";
inline constexpr std::string_view max_connections = "maximum connections exceeded";
inline constexpr std::string_view max_subscriptions = "maximum subscriptions exceeded";
}  // namespace err_text

}  // namespace proto
