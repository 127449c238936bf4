// Helpers shared by the CLI's command groups.
#include <chrono>
#include <random>

#include "src/cli/commands.h"

namespace peregrine::cli {

void print_json(ordered_json j) {
  if (j.is_object()) j.erase("type");
  std::printf("%s\n", j.dump(2).c_str());
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string now_hms() { return short_time(now_ns()).substr(11); }

std::string header_lines(natsMsg* m) {
  const char** keys = nullptr;
  int count = 0;
  if (natsMsgHeader_Keys(m, &keys, &count) != NATS_OK || count == 0) return "";
  std::string out;
  for (int i = 0; i < count; ++i) {
    const char** values = nullptr;
    int nv = 0;
    if (natsMsgHeader_Values(m, keys[i], &values, &nv) != NATS_OK) continue;
    for (int v = 0; v < nv; ++v) out += std::string(keys[i]) + ": " + values[v] + "\n";
    free(static_cast<void*>(values));
  }
  free(static_cast<void*>(keys));
  return out;
}

std::string payload_of(natsMsg* m) {
  const char* d = natsMsg_GetData(m);
  return d == nullptr ? std::string() : std::string(d, static_cast<size_t>(natsMsg_GetDataLength(m)));
}

std::string random_id() {
  static const char alphabet[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  static std::mt19937_64 rng{std::random_device{}()};
  std::string id(22, '0');
  for (char& c : id) c = alphabet[rng() % 62];
  return id;
}

const CLI::Validator& positive() {
  static const CLI::Validator v = CLI::PositiveNumber;
  return v;
}

ack_meta parse_ack_subject(const std::string& reply) {
  std::vector<std::string> t;
  size_t start = 0;
  for (size_t p; (p = reply.find('.', start)) != std::string::npos; start = p + 1) t.push_back(reply.substr(start, p - start));
  t.push_back(reply.substr(start));
  ack_meta m;
  if (t.size() < 9 || t[0] != "$JS" || t[1] != "ACK") return m;
  // v1: $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>
  // v2: $JS.ACK.<domain>.<account hash>.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>[.<token>]
  const size_t base = t.size() == 9 ? 2 : 4;
  if (t.size() != 9 && t.size() < 11) return m;
  try {
    m.stream = t[base];
    m.consumer = t[base + 1];
    m.delivered = std::stoull(t[base + 2]);
    m.stream_seq = std::stoull(t[base + 3]);
    m.consumer_seq = std::stoull(t[base + 4]);
    m.timestamp_ns = std::stoll(t[base + 5]);
    m.pending = std::stoull(t[base + 6]);
    m.ok = true;
  } catch (...) {
    m.ok = false;
  }
  return m;
}

reply_stream send_for_replies(client& cl, const std::string& subject, const std::string& body) {
  reply_stream r;
  natsInbox* inbox = nullptr;
  if (natsInbox_Create(&inbox) != NATS_OK) throw cli_error("cannot create an inbox");
  r.inbox.reset(inbox);
  natsSubscription* sub = nullptr;
  natsStatus s = natsConnection_SubscribeSync(&sub, cl.nc(), inbox);
  if (s != NATS_OK) throw cli_error(status_text(s));
  r.sub.reset(sub);
  s = natsConnection_PublishRequest(cl.nc(), subject.c_str(), inbox, body.data(), static_cast<int>(body.size()));
  if (s != NATS_OK) throw cli_error(status_text(s));
  return r;
}

std::vector<msg_ptr> pull(client& cl, const std::string& stream, const std::string& consumer, int batch,
                          int64_t expires_ms, const std::string& group) {
  ordered_json req = {{"batch", batch}, {"expires", expires_ms * 1'000'000}};
  if (!group.empty()) req["group"] = group;  // priority groups (overflow, pinned_client)
  const reply_stream replies = send_for_replies(cl, "$JS.API.CONSUMER.MSG.NEXT." + stream + "." + consumer, req.dump());
  natsSubscription* sub = replies.sub.get();
  std::vector<msg_ptr> out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(expires_ms + 500);
  while (static_cast<int>(out.size()) < batch) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    natsMsg* m = nullptr;
    if (natsSubscription_NextMsg(&m, sub, left.count()) != NATS_OK) break;
    msg_ptr msg(m);
    const char* status = nullptr;
    if (natsMsgHeader_Get(m, "Status", &status) == NATS_OK && natsMsg_GetDataLength(m) == 0) {
      if (std::string(status) == "100") continue;  // heartbeat
      break;                                       // 404 / 408 / 409: the pull is over
    }
    out.push_back(std::move(msg));
  }
  return out;
}

}  // namespace peregrine::cli
