// Request/reply (new- and old-style inboxes), no-responders, and message headers.
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "tests/integration/server_fixture.h"

namespace peregrine::test {
namespace {

using namespace std::chrono_literals;

class request_reply : public server_test {};
class headers : public server_test {};

// Async responder: answers every request with "re:" + payload and remembers the reply subjects.
struct responder {
  natsConnection* nc = nullptr;
  std::atomic<int> served{0};
  std::mutex mu;
  std::vector<std::string> replies;

  static void on_msg(natsConnection*, natsSubscription*, natsMsg* msg, void* closure) {
    auto* self = static_cast<responder*>(closure);
    const char* reply = natsMsg_GetReply(msg);
    if (reply != nullptr) {
      {
        std::lock_guard lock(self->mu);
        self->replies.emplace_back(reply);
      }
      std::string body = "re:" + std::string(natsMsg_GetData(msg), natsMsg_GetDataLength(msg));
      natsConnection_Publish(self->nc, reply, body.data(), static_cast<int>(body.size()));
      ++self->served;
    }
    natsMsg_Destroy(msg);
  }
};

std::string data_of(natsMsg* m) { return std::string(natsMsg_GetData(m), natsMsg_GetDataLength(m)); }

size_t count_tokens(const std::string& s) {
  size_t n = 1;
  for (char c : s) n += c == '.' ? 1 : 0;
  return n;
}

TEST_F(request_reply, new_style_requests_share_one_wildcard_inbox) {
  auto server_nc = connect(url());
  auto client_nc = connect(url());
  ASSERT_TRUE(server_nc && client_nc);
  responder r;
  r.nc = server_nc.get();
  natsSubscription* raw_sub = nullptr;
  ASSERT_EQ(natsConnection_Subscribe(&raw_sub, server_nc.get(), "svc.echo", responder::on_msg, &r), NATS_OK);
  sub_ptr sub(raw_sub);
  ASSERT_EQ(natsConnection_Flush(server_nc.get()), NATS_OK);

  constexpr int n = 20;
  for (int i = 0; i < n; ++i) {
    natsMsg* reply = nullptr;
    const std::string body = "q" + std::to_string(i);
    natsStatus s = natsConnection_Request(&reply, client_nc.get(), "svc.echo", body.data(),
                                          static_cast<int>(body.size()), 5000);
    ASSERT_EQ(s, NATS_OK) << status_text(s);
    msg_ptr m(reply);
    EXPECT_EQ(data_of(m.get()), "re:" + body);
  }
  EXPECT_EQ(r.served.load(), n);
  std::lock_guard lock(r.mu);
  ASSERT_EQ(r.replies.size(), static_cast<size_t>(n));
  // New style: _INBOX.<nuid>.<token>, same prefix for every request on the connection.
  const std::string& first = r.replies.front();
  ASSERT_EQ(first.rfind("_INBOX.", 0), 0u) << first;
  EXPECT_EQ(count_tokens(first), 3u) << first;
  const std::string prefix = first.substr(0, first.rfind('.') + 1);
  for (const auto& rep : r.replies)
    EXPECT_EQ(rep.rfind(prefix, 0), 0u) << rep << " does not share inbox prefix " << prefix;
  EXPECT_EQ(std::set<std::string>(r.replies.begin(), r.replies.end()).size(), r.replies.size())
      << "each request has its own reply token";
}

TEST_F(request_reply, old_style_request_uses_private_inbox) {
  auto server_nc = connect(url());
  ASSERT_TRUE(server_nc);
  auto opts = make_opts(url());
  ASSERT_EQ(natsOptions_UseOldRequestStyle(opts.get(), true), NATS_OK);
  auto client_nc = connect(opts.get());
  ASSERT_TRUE(client_nc);
  responder r;
  r.nc = server_nc.get();
  natsSubscription* raw_sub = nullptr;
  ASSERT_EQ(natsConnection_Subscribe(&raw_sub, server_nc.get(), "svc.old", responder::on_msg, &r), NATS_OK);
  sub_ptr sub(raw_sub);
  ASSERT_EQ(natsConnection_Flush(server_nc.get()), NATS_OK);
  for (int i = 0; i < 3; ++i) {
    natsMsg* reply = nullptr;
    natsStatus s = natsConnection_RequestString(&reply, client_nc.get(), "svc.old", "ping", 5000);
    ASSERT_EQ(s, NATS_OK) << status_text(s);
    msg_ptr m(reply);
    EXPECT_EQ(data_of(m.get()), "re:ping");
  }
}

TEST_F(request_reply, queue_group_responders_answer_once) {
  auto a = connect(url());
  auto b = connect(url());
  auto client = connect(url());
  ASSERT_TRUE(a && b && client);
  responder ra, rb;
  ra.nc = a.get();
  rb.nc = b.get();
  natsSubscription* sa = nullptr;
  natsSubscription* sb = nullptr;
  ASSERT_EQ(natsConnection_QueueSubscribe(&sa, a.get(), "svc.q", "workers", responder::on_msg, &ra), NATS_OK);
  ASSERT_EQ(natsConnection_QueueSubscribe(&sb, b.get(), "svc.q", "workers", responder::on_msg, &rb), NATS_OK);
  sub_ptr hold_a(sa), hold_b(sb);
  ASSERT_EQ(natsConnection_Flush(a.get()), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(b.get()), NATS_OK);
  for (int i = 0; i < 40; ++i) {
    natsMsg* reply = nullptr;
    ASSERT_EQ(natsConnection_RequestString(&reply, client.get(), "svc.q", "x", 5000), NATS_OK);
    natsMsg_Destroy(reply);
  }
  EXPECT_EQ(ra.served.load() + rb.served.load(), 40);
}

TEST_F(request_reply, no_responders_fails_fast) {
  auto nc = connect(url());
  ASSERT_TRUE(nc);
  ASSERT_TRUE(natsConnection_HasHeaderSupport(nc.get()) == NATS_OK);
  natsMsg* reply = nullptr;
  // A long timeout: without the 503 status this would return NATS_TIMEOUT, not NO_RESPONDERS.
  natsStatus s = natsConnection_RequestString(&reply, nc.get(), "nobody.home", "hi", 10000);
  EXPECT_EQ(s, NATS_NO_RESPONDERS) << status_text(s);
  natsMsg_Destroy(reply);
  EXPECT_TRUE(healthy_client_works(url()));
}

TEST_F(request_reply, raw_no_responders_status_message) {
  raw_client c;
  ASSERT_TRUE(c.open(port()));
  ASSERT_TRUE(c.send("SUB _INBOX.abc.* 9\r\nPUB nobody.home _INBOX.abc.1 2\r\nhi\r\n"));
  auto line = c.read_line();
  ASSERT_TRUE(line);
  // 2.9.10 sends a bare 503; 2.12+ (our target) adds Nats-Subject. Accept exactly one of both.
  const std::string old_hdr = "NATS/1.0 503\r\n\r\n";
  const std::string new_hdr = "NATS/1.0 503\r\nNats-Subject: nobody.home\r\n\r\n";
  const std::string old_line = "HMSG _INBOX.abc.1 9 16 16\r\n";
  const std::string new_line = "HMSG _INBOX.abc.1 9 " + std::to_string(new_hdr.size()) + " " +
                               std::to_string(new_hdr.size()) + "\r\n";
  if (*line == old_line) {
    EXPECT_EQ(c.read_bytes(old_hdr.size() + 2), old_hdr + "\r\n");
  } else {
    ASSERT_EQ(*line, new_line);
    EXPECT_EQ(c.read_bytes(new_hdr.size() + 2), new_hdr + "\r\n");
  }
  ASSERT_TRUE(c.ping_pong());

  // Requester without a matching reply subscription: nothing is sent.
  ASSERT_TRUE(c.send("PUB nobody.home _INBOX.zzz.1 0\r\n\r\n"));
  EXPECT_TRUE(c.ping_pong());
}

TEST_F(request_reply, raw_no_responders_not_sent_without_opt_in) {
  raw_client c;
  ASSERT_TRUE(c.open(port(), "CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":true}\r\n"));
  ASSERT_TRUE(c.send("SUB _INBOX.abc.* 9\r\nPUB nobody.home _INBOX.abc.1 0\r\n\r\n"));
  EXPECT_TRUE(c.ping_pong()) << "no 503 without no_responders:true";
}

TEST_F(headers, set_add_and_multi_value_round_trip) {
  auto nc = connect(url());
  ASSERT_TRUE(nc);
  ASSERT_EQ(natsConnection_HasHeaderSupport(nc.get()), NATS_OK);
  auto sub = subscribe_sync(nc.get(), "hdr.test");
  ASSERT_TRUE(sub);

  natsMsg* raw = nullptr;
  ASSERT_EQ(natsMsg_Create(&raw, "hdr.test", nullptr, "body", 4), NATS_OK);
  msg_ptr out(raw);
  ASSERT_EQ(natsMsgHeader_Set(out.get(), "X-Single", "one"), NATS_OK);
  ASSERT_EQ(natsMsgHeader_Set(out.get(), "Multi", "a"), NATS_OK);
  ASSERT_EQ(natsMsgHeader_Add(out.get(), "Multi", "b"), NATS_OK);
  ASSERT_EQ(natsMsgHeader_Add(out.get(), "Multi", "c c"), NATS_OK);
  ASSERT_EQ(natsMsgHeader_Set(out.get(), "CaSe-Kept", "v"), NATS_OK);
  ASSERT_EQ(natsConnection_PublishMsg(nc.get(), out.get()), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(nc.get()), NATS_OK);

  auto in = next_msg(sub.get(), 2s);
  ASSERT_TRUE(in);
  EXPECT_EQ(data_of(in.get()), "body");
  const char* v = nullptr;
  ASSERT_EQ(natsMsgHeader_Get(in.get(), "X-Single", &v), NATS_OK);
  EXPECT_STREQ(v, "one");
  const char** values = nullptr;
  int count = 0;
  ASSERT_EQ(natsMsgHeader_Values(in.get(), "Multi", &values, &count), NATS_OK);
  ASSERT_EQ(count, 3);
  EXPECT_STREQ(values[0], "a");
  EXPECT_STREQ(values[1], "b");
  EXPECT_STREQ(values[2], "c c");
  free(static_cast<void*>(values));
  ASSERT_EQ(natsMsgHeader_Get(in.get(), "CaSe-Kept", &v), NATS_OK) << "header names are case preserving";
  EXPECT_STREQ(v, "v");
}

TEST_F(headers, request_reply_carries_headers_both_ways) {
  auto nc = connect(url());
  ASSERT_TRUE(nc);
  auto sub = subscribe_sync(nc.get(), "hdr.svc");
  ASSERT_TRUE(sub);
  ASSERT_EQ(natsConnection_Flush(nc.get()), NATS_OK);
  // `nc` is the responder (sync subscription, answered from this thread); `client` requests.
  auto client = connect(url());
  ASSERT_TRUE(client);
  // natsConnection_RequestMsg would block this thread, so publish with an explicit inbox.
  auto inbox_sub = subscribe_sync(client.get(), "_INBOX.hdrtest.1");
  ASSERT_TRUE(inbox_sub);
  natsMsg* req2_raw = nullptr;
  ASSERT_EQ(natsMsg_Create(&req2_raw, "hdr.svc", "_INBOX.hdrtest.1", "q", 1), NATS_OK);
  msg_ptr req2(req2_raw);
  ASSERT_EQ(natsMsgHeader_Set(req2.get(), "Trace-Id", "t-1"), NATS_OK);
  ASSERT_EQ(natsConnection_PublishMsg(client.get(), req2.get()), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(client.get()), NATS_OK);

  auto got = next_msg(sub.get(), 2s);
  ASSERT_TRUE(got);
  const char* v = nullptr;
  ASSERT_EQ(natsMsgHeader_Get(got.get(), "Trace-Id", &v), NATS_OK);
  EXPECT_STREQ(v, "t-1");
  ASSERT_STREQ(natsMsg_GetReply(got.get()), "_INBOX.hdrtest.1");
  natsMsg* resp_raw = nullptr;
  ASSERT_EQ(natsMsg_Create(&resp_raw, natsMsg_GetReply(got.get()), nullptr, "r", 1), NATS_OK);
  msg_ptr resp(resp_raw);
  ASSERT_EQ(natsMsgHeader_Set(resp.get(), "Answer", "42"), NATS_OK);
  ASSERT_EQ(natsConnection_PublishMsg(nc.get(), resp.get()), NATS_OK);
  ASSERT_EQ(natsConnection_Flush(nc.get()), NATS_OK);

  auto answer = next_msg(inbox_sub.get(), 2s);
  ASSERT_TRUE(answer);
  ASSERT_EQ(natsMsgHeader_Get(answer.get(), "Answer", &v), NATS_OK);
  EXPECT_STREQ(v, "42");
}

TEST_F(headers, raw_hpub_hmsg_exact_bytes) {
  raw_client c;
  ASSERT_TRUE(c.open(port()));
  ASSERT_TRUE(c.send("SUB foo 1\r\nHPUB foo 24 29\r\nNATS/1.0\r\nA: b\r\nA: c\r\n\r\nhello\r\n"));
  EXPECT_EQ(c.read_line(), "HMSG foo 1 24 29\r\n");
  EXPECT_EQ(c.read_bytes(31), "NATS/1.0\r\nA: b\r\nA: c\r\n\r\nhello\r\n");
  ASSERT_TRUE(c.send("HPUB foo r.1 12 12\r\nNATS/1.0\r\n\r\n\r\n"));
  EXPECT_EQ(c.read_line(), "HMSG foo 1 r.1 12 12\r\n");
  EXPECT_EQ(c.read_bytes(14), "NATS/1.0\r\n\r\n\r\n");
  EXPECT_TRUE(c.ping_pong());
}

TEST_F(headers, stripped_for_subscriber_without_header_support) {
  raw_client plain;
  ASSERT_TRUE(plain.open(port(), "CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":false}\r\n"));
  ASSERT_TRUE(plain.send("SUB foo 3\r\n"));
  ASSERT_TRUE(plain.ping_pong());
  raw_client pub;
  ASSERT_TRUE(pub.open(port()));
  ASSERT_TRUE(pub.send("HPUB foo 24 29\r\nNATS/1.0\r\nA: b\r\nA: c\r\n\r\nhello\r\n"));
  ASSERT_TRUE(pub.ping_pong());
  EXPECT_EQ(plain.read_line(), "MSG foo 3 5\r\n");
  EXPECT_EQ(plain.read_bytes(7), "hello\r\n");
}

TEST_F(headers, raw_hpub_without_negotiated_headers_closes) {
  raw_client c;
  ASSERT_TRUE(c.open(port(), "CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":false}\r\n"));
  ASSERT_TRUE(c.send("HPUB foo 12 12\r\nNATS/1.0\r\n\r\n\r\n"));
  auto rest = c.read_until_closed(5s);
  ASSERT_TRUE(rest) << "connection stayed open";
  EXPECT_EQ(*rest, "") << "closed without -ERR (spec 1.9)";
  EXPECT_TRUE(healthy_client_works(url()));
}

}  // namespace
}  // namespace peregrine::test
