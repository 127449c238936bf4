#pragma once
// Accounts: each has its own subject namespace (a sublist per account on every shard). Stream
// and service imports are forwards applied when a message is published: pure rules here, the
// dispatcher routes. Account 0 is the global account ($G): users outside `accounts`, and
// JetStream.
#include <cstdint>
#include <string>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace core {

inline constexpr std::uint32_t kGlobalAccount = 0;

// A message published in the owning account on `subject` is also routed in `to_account`.
struct stream_forward {
  std::string subject;  // the export's (imported) subject filter
  std::uint32_t to_account = 0;
  std::string prefix;   // delivered as "prefix.<subject>"
  std::string to;       // or renamed to this (wildcards mapped by position: map_import_subject)
};

// A request published in the owning (importing) account on `local` goes to `to_account` on
// `remote`, with its reply rewritten so the response comes back (service_reply).
// The export's response_type decides how many responses pass back: Singleton one, Stream
// and Chunked any number until an empty one ends them; all within the threshold (default 2 min).
struct service_forward {
  std::string local;
  std::string remote;
  std::uint32_t to_account = 0;
  bool singleton = true;
  std::int64_t threshold_ms = 120'000;
};

struct account_rules {
  std::string name;
  std::vector<stream_forward> streams_out;   // exports of this account others import
  std::vector<service_forward> services_out;  // this account's service imports
};

// An import's subject mapping: `subject` (matching `from`) as `to` says. A literal `to` is
// the subject itself; a `to` with wildcards takes what from's wildcards matched, by position
// ("$JS.API.>" -> "JS.A.API.>" maps "$JS.API.INFO" to "JS.A.API.INFO").
std::string map_import_subject(std::string_view from, std::string_view to, std::string_view subject);
// True when `to` can stand for `from` in an import: both literal, or the same number of `*`
// and both or neither ending in `>` (nats-server's import transforms, by position).
bool import_mappable(std::string_view from, std::string_view to);

// The subject a stream import delivers `subject` under.
std::string stream_import_subject(const stream_forward& f, std::string_view subject);
// The exporter's subject a cluster announces for a subscription on `subscribed` in the
// importing account (nats-server's shadow subscription): the subscription mapped back through
// the import when it lies inside what the import delivers, else the export's whole filter.
// False when the two do not overlap.
bool stream_import_interest(const stream_forward& f, std::string_view subscribed, std::string& exporter_subject);
// The subject a service import sends a request on `subject` to (its `to`, local, mapped
// back to the exported subject, remote).
std::string service_import_subject(const service_forward& f, std::string_view subject);

// Replies of service imports: "_R_.<tag>.<account>.<expires ms>.<kind><mac>.<reply>" (kind
// 's' for Singleton, 'm' for more). The tag is random per process: a cluster announces
// "_R_.<tag>.>" in each exporting account, so a response given on another server comes back
// over the route to the server that issued it (as nats-server's per-account "_R_.<prefix>.>"
// wildcard does). The mac (keyed SipHash, a key per process) means an exporter can answer
// requests but not forge messages into any subject of the importing account, nor stretch a
// reply's threshold or kind; after the threshold answers are dropped.
inline constexpr std::int64_t kServiceReplyTtlMs = 120'000;
bool is_service_reply(std::string_view subject);
// "_R_.<tag>.": this process's replies start with it.
const std::string& service_reply_prefix();
std::string service_reply(std::uint32_t account, std::string_view reply, std::int64_t now_ms, bool singleton = false,
                          std::int64_t threshold_ms = kServiceReplyTtlMs);
struct service_reply_info {
  std::uint32_t account = 0;  // the requester's
  std::string reply;          // the requester's own reply subject
  bool singleton = false;
  std::int64_t expires_ms = 0;
};
// True with the requester's account and reply when `subject` is a genuine, live service reply.
bool parse_service_reply(std::string_view subject, std::int64_t now_ms, service_reply_info& out);

// Which responses to a service reply pass (shared by the shards: responders of one request may
// publish on different shards): a Singleton's first, a stream's until its empty message (which
// passes), none after. Entries go when their reply expires. Thread-safe; touched only by
// responses through imports, never by other traffic.
class response_ledger {
 public:
  bool pass(std::string_view subject, const service_reply_info& r, bool empty_payload, std::int64_t now_ms);
  std::size_t size() const;

 private:
  mutable std::mutex _mu;
  std::unordered_map<std::string, std::int64_t> _ended;  // reply subject -> its expiry
  std::int64_t _next_prune_ms = 0;
};

}  // namespace core
