// RAII wrappers and small helpers around libnats (nats.c) for the integration tests.
#pragma once

#include <gtest/gtest.h>
#include <nats/nats.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace peregrine::test {

struct nc_deleter {
  void operator()(natsConnection* nc) const { natsConnection_Destroy(nc); }
};
struct opts_deleter {
  void operator()(natsOptions* o) const { natsOptions_Destroy(o); }
};
struct sub_deleter {
  void operator()(natsSubscription* s) const { natsSubscription_Destroy(s); }
};
struct msg_deleter {
  void operator()(natsMsg* m) const { natsMsg_Destroy(m); }
};
using nc_ptr = std::unique_ptr<natsConnection, nc_deleter>;
using opts_ptr = std::unique_ptr<natsOptions, opts_deleter>;
using sub_ptr = std::unique_ptr<natsSubscription, sub_deleter>;
using msg_ptr = std::unique_ptr<natsMsg, msg_deleter>;

// Options tests start from: the url, no reconnect (a dropped connection must show up as a failure,
// not be papered over) and a bounded connect timeout.
opts_ptr make_opts(const std::string& url);

// Connects; on failure returns null and fills *err with status text + last error.
nc_ptr connect(natsOptions* opts, std::string* err = nullptr);
nc_ptr connect(const std::string& url, std::string* err = nullptr);

sub_ptr subscribe_sync(natsConnection* nc, const std::string& subject,
                       const std::string& queue = {});

// Next message within timeout, or null.
msg_ptr next_msg(natsSubscription* sub, std::chrono::milliseconds timeout);

// After natsConnection_Flush on the subscriber's connection every message routed before the PONG
// is already queued on the subscription, so this returns an exact count without sleeping.
int pending_msgs(natsSubscription* sub);

// Drains all currently queued messages and returns their subjects in order.
std::vector<std::string> drain_subjects(natsSubscription* sub);

// A fresh libnats connection can subscribe, publish and receive its own message.
::testing::AssertionResult healthy_client_works(const std::string& url);

std::string status_text(natsStatus s);

// PEREGRINE_TIME_SCALE (meson sets 5 in sanitizer builds, else 1): how much slower the server
// under test runs; request timeouts and deadlines are stretched by it.
double sanitizer_time_scale();

// Standard base64 (the JSON encoding of []byte fields: STREAM.MSG.GET's data and hdrs); stops
// at padding or the first character outside the alphabet.
std::string base64_decode(const std::string& in);

}  // namespace peregrine::test
