#pragma once
// Accounts: each has its own subject namespace (a sublist per account on every shard). Stream
// and service imports are forwards applied when a message is published: pure rules here, the
// dispatcher routes. Account 0 is the global account ($G): users outside `accounts`, and
// JetStream.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace core {

inline constexpr std::uint32_t kGlobalAccount = 0;

// A message published in the owning account on `subject` is also routed in `to_account`.
struct stream_forward {
  std::string subject;  // the export's (imported) subject filter
  std::uint32_t to_account = 0;
  std::string prefix;   // delivered as "prefix.<subject>"
  std::string to;       // or renamed to this literal subject
};

// A request published in the owning (importing) account on `local` goes to `to_account` on
// `remote`, with its reply rewritten so the response comes back (service_reply).
struct service_forward {
  std::string local;
  std::string remote;
  std::uint32_t to_account = 0;
};

struct account_rules {
  std::string name;
  std::vector<stream_forward> streams_out;   // exports of this account others import
  std::vector<service_forward> services_out;  // this account's service imports
};

// The subject a stream import delivers `subject` under.
std::string stream_import_subject(const stream_forward& f, std::string_view subject);
// The exporter's subject a cluster announces for a subscription on `subscribed` in the
// importing account (nats-server's shadow subscription): the subscription mapped back through
// the import when it lies inside what the import delivers, else the export's whole filter.
// False when the two do not overlap.
bool stream_import_interest(const stream_forward& f, std::string_view subscribed, std::string& exporter_subject);
// The subject a service import sends a request on `subject` to.
std::string service_import_subject(const service_forward& f, std::string_view subject);

// Replies of service imports: "_R_.<tag>.<account>.<issued s>.<mac>.<reply>". The tag is
// random per process: a cluster announces "_R_.<tag>.>" in each exporting account, so a
// response given on another server comes back over the route to the server that issued it
// (as nats-server's per-account "_R_.<prefix>.>" wildcard does). The mac (keyed SipHash, a
// key per process) means an exporter can answer requests but not forge messages into any
// subject of the importing account; a reply is good for kServiceReplyTtlS after the request
// (nats-server's service response threshold), then answers are dropped.
inline constexpr std::int64_t kServiceReplyTtlS = 120;
bool is_service_reply(std::string_view subject);
// "_R_.<tag>.": this process's replies start with it.
const std::string& service_reply_prefix();
std::string service_reply(std::uint32_t account, std::string_view reply, std::int64_t now_s);
// True with the requester's account and reply when `subject` is a genuine, live service reply.
bool parse_service_reply(std::string_view subject, std::int64_t now_s, std::uint32_t& account, std::string& reply);

}  // namespace core
