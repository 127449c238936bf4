#pragma once
// The `authorization` block's configuration as nats-server reads it: users (password, bcrypt
// hash or nkey) and their publish/subscribe permissions. Plain values: compared on reload.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace core {

// One direction of a user's permissions. No allow list allows everything (the deny list still
// applies); an allow list, even an empty one, allows only what it names. Subscribe entries may
// be "subject queue" to name a queue group.
struct subject_permission {
  std::optional<std::vector<std::string>> allow;
  std::vector<std::string> deny;
  bool operator==(const subject_permission&) const = default;
};

// allow_responses: a client may publish to the reply subject of a message it received, at most
// `max_msgs` times within `expires_ms` of the delivery (<= 0: no bound), as nats-server's
// defaults (1 message, 2 minutes).
struct response_permission {
  std::int64_t max_msgs = 1;
  std::int64_t expires_ms = 120'000;
  bool operator==(const response_permission&) const = default;
};

struct permissions {
  std::optional<subject_permission> publish;
  std::optional<subject_permission> subscribe;
  std::optional<response_permission> responses;
  bool operator==(const permissions&) const = default;
};

struct user_config {
  std::string user;      // empty for an nkey user
  std::string password;  // plain text or a bcrypt hash ($2a$/$2b$/$2y$)
  std::string nkey;      // public user nkey ("U..."): authenticates by signing the INFO nonce
  std::optional<permissions> perms;  // none: its block's default_permissions
  bool operator==(const user_config&) const = default;
};

// accounts { NAME { users, exports, imports } }: subject namespaces of their own. An export
// offers a stream (messages flow out to importers) or a service (requests flow in) on a
// subject, to every account or to those listed.
struct account_export {
  bool service = false;
  std::string subject;
  std::vector<std::string> accounts;  // empty: any account may import
  std::string response_type;          // service: Singleton (default), Stream, Chunked
  // service: how long after a request its responses pass back through an import (0: 2 min)
  std::int64_t response_threshold_ms = 0;
  bool operator==(const account_export&) const = default;
};

// stream: messages published in `account` on `subject` are delivered here, under `prefix`
// ("prefix.subject") or renamed `to` (a literal subject). service: publishing here on `to`
// (default: `subject`) sends the request to `account` on `subject`; its replies come back.
struct account_import {
  bool service = false;
  std::string account;
  std::string subject;
  std::string to;
  std::string prefix;
  bool operator==(const account_import&) const = default;
};

struct account_config {
  std::string name;
  std::vector<user_config> users;
  std::vector<account_export> exports;
  std::vector<account_import> imports;
  std::optional<permissions> default_permissions;  // for this account's users without their own
  // jetstream: enabled | { max_memory, max_file, max_streams, max_consumers, ... } (-1: unlimited).
  bool jetstream = false;
  std::int64_t js_max_memory = -1;
  std::int64_t js_max_file = -1;
  std::int64_t js_max_streams = -1;
  std::int64_t js_max_consumers = -1;
  // max_ack_pending, max_bytes_required, memory/store_max_stream_bytes (nats-server's names).
  std::int64_t js_max_ack_pending = -1;
  bool js_max_bytes_required = false;
  std::int64_t js_memory_max_stream_bytes = -1;
  std::int64_t js_store_max_stream_bytes = -1;
  bool operator==(const account_config&) const = default;
};

}  // namespace core
