#pragma once
// The factories of JetStream's core services (one per owner thread, per account, and the
// responder of accounts without JetStream) and the account limits they take. The service
// class itself, the hub, is `jetstream` in jetstream_service.h.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "src/core/service.h"

namespace js {

std::unique_ptr<core::service> make_jetstream_service();
// --js_threads N: n instances sharing one placement; instance i runs on owner thread i and
// instance 0 serves $JS.API (jetstream_owners.h).
std::vector<std::unique_ptr<core::service>> make_jetstream_owners(std::size_t n);

// One account's JetStream (accounts { A { jetstream: enabled | { limits } } }); -1: unlimited.
// Its streams live under <store_dir>/jetstream/<account>/streams.
struct account_limits {
  std::string account = "$G";
  std::int64_t max_memory = -1;
  std::int64_t max_file = -1;
  std::int64_t max_streams = -1;
  std::int64_t max_consumers = -1;
  std::int64_t max_ack_pending = -1;           // consumers' ceiling and default cap (10121)
  bool max_bytes_required = false;             // every stream sets max_bytes (10113)
  std::int64_t memory_max_stream_bytes = -1;   // a memory stream's max_bytes ceiling (10122)
  std::int64_t store_max_stream_bytes = -1;    // a file stream's
};

// For an account without JetStream: answers its $JS.API requests with 10039 (account_disabled.h).
std::unique_ptr<core::service> make_jetstream_disabled();

// A service for the server to run in `account` on owner thread `owner`.
struct account_service {
  std::unique_ptr<core::service> svc;
  std::string account;
  std::size_t owner = 0;
};

// JetStream for several accounts: n instances (one per owner thread) for each account of
// `enabled`, sharing the server-wide storage counters; and for each account of `disabled` a
// responder that answers its $JS.API requests with 10039, as nats-server does.
// With `consumer_threads` > 0 each such account also gets that many consumer thread services
// (consumer_thread.h), at owner indexes n .. n + consumer_threads - 1.
std::vector<account_service> make_jetstream_accounts(std::size_t n, const std::vector<account_limits>& enabled,
                                                     const std::vector<std::string>& disabled,
                                                     std::size_t consumer_threads = 0);

}  // namespace js
