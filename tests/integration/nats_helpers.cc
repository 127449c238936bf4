#include "tests/integration/nats_helpers.h"

#include <atomic>
#include <cstdlib>

namespace peregrine::test {

std::string status_text(natsStatus s) {
  std::string out = natsStatus_GetText(s);
  const char* last = nats_GetLastError(nullptr);
  if (last != nullptr && *last != '\0') out += std::string(" (") + last + ")";
  return out;
}

opts_ptr make_opts(const std::string& url) {
  natsOptions* o = nullptr;
  if (natsOptions_Create(&o) != NATS_OK) return nullptr;
  opts_ptr opts(o);
  natsOptions_SetURL(o, url.c_str());
  natsOptions_SetAllowReconnect(o, false);
  natsOptions_SetTimeout(o, 5000);
  return opts;
}

nc_ptr connect(natsOptions* opts, std::string* err) {
  natsConnection* nc = nullptr;
  natsStatus s = natsConnection_Connect(&nc, opts);
  if (s != NATS_OK) {
    if (err != nullptr) *err = status_text(s);
    return nullptr;
  }
  return nc_ptr(nc);
}

nc_ptr connect(const std::string& url, std::string* err) {
  auto opts = make_opts(url);
  if (!opts) return nullptr;
  return connect(opts.get(), err);
}

sub_ptr subscribe_sync(natsConnection* nc, const std::string& subject, const std::string& queue) {
  natsSubscription* sub = nullptr;
  natsStatus s = queue.empty()
                     ? natsConnection_SubscribeSync(&sub, nc, subject.c_str())
                     : natsConnection_QueueSubscribeSync(&sub, nc, subject.c_str(), queue.c_str());
  if (s != NATS_OK) return nullptr;
  return sub_ptr(sub);
}

msg_ptr next_msg(natsSubscription* sub, std::chrono::milliseconds timeout) {
  natsMsg* m = nullptr;
  if (natsSubscription_NextMsg(&m, sub, timeout.count()) != NATS_OK) return nullptr;
  return msg_ptr(m);
}

int pending_msgs(natsSubscription* sub) {
  int msgs = 0;
  int bytes = 0;
  if (natsSubscription_GetPending(sub, &msgs, &bytes) != NATS_OK) return -1;
  return msgs;
}

std::vector<std::string> drain_subjects(natsSubscription* sub) {
  std::vector<std::string> out;
  while (pending_msgs(sub) > 0) {
    auto m = next_msg(sub, std::chrono::milliseconds(500));
    if (!m) break;
    out.emplace_back(natsMsg_GetSubject(m.get()));
  }
  return out;
}

::testing::AssertionResult healthy_client_works(const std::string& url) {
  static std::atomic<int> seq{0};
  std::string err;
  auto nc = connect(url, &err);
  if (!nc) return ::testing::AssertionFailure() << "healthy client cannot connect: " << err;
  const std::string subject = "health.check." + std::to_string(seq++);
  auto sub = subscribe_sync(nc.get(), subject);
  if (!sub) return ::testing::AssertionFailure() << "healthy client cannot subscribe";
  if (natsConnection_Flush(nc.get()) != NATS_OK)
    return ::testing::AssertionFailure() << "healthy client flush failed";
  natsStatus s = natsConnection_PublishString(nc.get(), subject.c_str(), "alive");
  if (s != NATS_OK) return ::testing::AssertionFailure() << "publish: " << status_text(s);
  auto m = next_msg(sub.get(), std::chrono::seconds(2));
  if (!m) return ::testing::AssertionFailure() << "healthy client got no message back";
  if (std::string(natsMsg_GetData(m.get()), natsMsg_GetDataLength(m.get())) != "alive")
    return ::testing::AssertionFailure() << "healthy client got a wrong payload";
  return ::testing::AssertionSuccess();
}

std::string base64_decode(const std::string& in) {
  static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  int acc = 0, bits = 0;
  for (char c : in) {
    const auto p = alphabet.find(c);
    if (p == std::string::npos) break;
    acc = ((acc << 6) | static_cast<int>(p)) & 0xffffff;  // 24 bits hold any pending ones
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

double sanitizer_time_scale() {
  const char* v = std::getenv("PEREGRINE_TIME_SCALE");
  const double x = v != nullptr ? std::atof(v) : 1.0;
  return x > 0 ? x : 1.0;
}

}  // namespace peregrine::test
