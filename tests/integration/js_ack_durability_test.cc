// A confirmed ack (ack sync: the ack carries a reply subject and the server answers it) is
// a promise like a PubAck: kill -9 at any moment never brings a confirmed message back.
// This is Peregrine's durability contract (README), stricter than nats-server 2.9.10, which
// answers an ack sync once the ack is applied in memory (consumer.go, processAck) and writes
// consumer state later.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <thread>
#include <vector>

#include "tests/integration/js_fixture.h"

namespace peregrine::test {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

struct meta_deleter {
  void operator()(jsMsgMetaData* m) const { jsMsgMetaData_Destroy(m); }
};
using meta_ptr = std::unique_ptr<jsMsgMetaData, meta_deleter>;

// Sanitizer builds run a slower server: meson sets PEREGRINE_TIME_SCALE (5 there, else 1).
int time_scale() {
  const char* v = std::getenv("PEREGRINE_TIME_SCALE");
  const int n = v ? std::atoi(v) : 1;
  return n > 0 ? n : 1;
}

bool reference_server() {
  const std::string bin = server_binary();
  return bin.size() >= 11 && bin.compare(bin.size() - 11, 11, "nats-server") == 0;
}

// What the acking client saw, across every server life.
struct ack_log {
  std::set<std::uint64_t> confirmed;          // stream seqs whose ack sync was answered
  std::set<std::uint64_t> in_doubt;           // ack sent, no answer (the kill): maybe applied
  std::vector<std::uint64_t> after_confirm;   // deliveries of an already confirmed seq
  std::atomic<std::size_t> confirmed_count{0};
  std::atomic<std::size_t> settled_count{0};  // |confirmed u in_doubt|
  std::size_t deliveries = 0;
  std::string end_reason;         // why the worker last stopped (its thread's; read after join)
  std::atomic<bool> ended{false};  // the worker returned (stop, kill, or an error)
};

class js_ack_durability : public js_test {
 protected:
  // (The caller clears log.ended before starting it.)
  // Fetches and ack-syncs as fast as it can on a connection of its own (no reconnect: a
  // killed server ends it) until `stop` is set or the server goes away.
  void ack_worker(const std::atomic<bool>& stop, ack_log& log) {
    log.end_reason = "stopped";
    ack_worker_loop(stop, log);
    log.ended = true;
  }
  void ack_worker_loop(const std::atomic<bool>& stop, ack_log& log) {
    nc_ptr nc = connect(url());
    if (!nc) {
      log.end_reason = "no connection";
      return;
    }
    jsCtx* raw_js = nullptr;
    if (natsConnection_JetStream(&raw_js, nc.get(), nullptr) != NATS_OK) {
      log.end_reason = "no JetStream context";
      return;
    }
    js_ptr js(raw_js);
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = "ACKD";
    so.Consumer = "C";
    natsSubscription* raw_sub = nullptr;
    jsErrCode jerr{};
    if (const natsStatus s = js_PullSubscribe(&raw_sub, js.get(), "ackd.>", "C", nullptr, &so, &jerr); s != NATS_OK) {
      log.end_reason = std::string("pull subscribe: ") + natsStatus_GetText(s) + ", js error " + std::to_string(int(jerr));
      return;
    }
    sub_ptr sub(raw_sub);
    bool gone = false;
    while (!stop && !gone) {
      natsMsgList list{};
      const natsStatus s = natsSubscription_Fetch(&list, sub.get(), 64, 500, &jerr);
      if (s == NATS_TIMEOUT) continue;
      if (s != NATS_OK) {
        log.end_reason = std::string("fetch: ") + natsStatus_GetText(s) + ", js error " + std::to_string(int(jerr));
        break;
      }
      for (int i = 0; i < list.Count && !gone; ++i) {
        jsMsgMetaData* md = nullptr;
        if (natsMsg_GetMetaData(&md, list.Msgs[i]) != NATS_OK) continue;
        meta_ptr meta(md);
        const std::uint64_t seq = meta->Sequence.Stream;
        ++log.deliveries;
        if (log.confirmed.count(seq)) log.after_confirm.push_back(seq);
        const bool answered = natsMsg_AckSync(list.Msgs[i], nullptr, &jerr) == NATS_OK;
        if (!answered) {
          gone = true;  // no answer: the ack may or may not have been applied
          log.end_reason = "ack sync of stream seq " + std::to_string(seq) + " unanswered";
          if (!log.confirmed.count(seq) && log.in_doubt.insert(seq).second) ++log.settled_count;
        } else if (log.confirmed.insert(seq).second) {
          ++log.confirmed_count;
          if (!log.in_doubt.count(seq)) ++log.settled_count;
        }
      }
      natsMsgList_Destroy(&list);
    }
  }

  // `rounds` lives of the server, each killed (-9) after `per_round` confirmations while the
  // worker acks at full speed, then a last life that drains the consumer; checks the log.
  void kill_rounds(std::uint64_t msgs, int rounds, std::size_t per_round);
};

void js_ack_durability::kill_rounds(std::uint64_t msgs, int rounds, std::size_t per_round) {
  ASSERT_FALSE(create({{"name", "ACKD"}, {"subjects", {"ackd.>"}}}).contains("error"));
  // ack_wait 2 s: long enough that a loaded machine does not redeliver a message the worker
  // is about to ack, short enough that what a kill left unconfirmed comes back quickly.
  json c = request("$JS.API.CONSUMER.CREATE.ACKD.C",
                   json({{"stream_name", "ACKD"},
                         {"config", {{"durable_name", "C"}, {"ack_policy", "explicit"}, {"ack_wait", 2000000000}}}})
                       .dump());
  ASSERT_FALSE(c.contains("error")) << c;
  const std::string payload(64, 'a');
  for (std::uint64_t i = 0; i < msgs; ++i)
    ASSERT_EQ(js_PublishAsync(js_.get(), "ackd.x", payload.data(), int(payload.size()), nullptr), NATS_OK);
  jsPubOptions po;
  jsPubOptions_Init(&po);
  po.MaxWait = 20000;
  ASSERT_EQ(js_PublishAsyncComplete(js_.get(), &po), NATS_OK);

  ack_log log;
  for (int round = 0; round < rounds; ++round) {
    std::atomic<bool> stop{false};
    const std::size_t before = log.confirmed_count;
    log.ended = false;
    std::thread worker([&] { ack_worker(stop, log); });
    // Kill while acks stream: after a few hundred confirmations, at a varying offset.
    const auto deadline = std::chrono::steady_clock::now() + 10s * time_scale();
    while (log.confirmed_count < before + per_round && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(2ms);
    std::this_thread::sleep_for(std::chrono::milliseconds(7 * round));
    const bool ended_before_kill = log.ended;
    const pid_t pid = server_pid();
    ASSERT_GT(pid, 0);
    ::kill(pid, SIGKILL);
    stop = true;
    worker.join();
    ASSERT_GT(log.confirmed_count, before) << "round " << round << ": no ack confirmed before the kill (worker: "
                                           << (ended_before_kill ? log.end_reason : "still running") << ")";
    js_.reset();
    nc_.reset();
    server_->stop();
    ASSERT_TRUE(server_->start()) << server_->error();
    reconnect();
  }
  ASSERT_LT(log.confirmed_count, msgs) << "the rounds consumed everything: no kill hit a busy consumer";

  // Last life: everything not confirmed yet (new, or left pending by a kill and redelivered
  // after ack_wait) is delivered and confirmed, until the consumer has nothing left.
  std::atomic<bool> stop{false};
  log.ended = false;
  std::thread worker([&] { ack_worker(stop, log); });
  const auto deadline = std::chrono::steady_clock::now() + 30s * time_scale();
  json i;
  while (std::chrono::steady_clock::now() < deadline && !log.ended) {
    std::this_thread::sleep_for(100ms);
    if (log.settled_count < msgs) continue;
    i = request("$JS.API.CONSUMER.INFO.ACKD.C");
    if (i.is_object() && i["num_ack_pending"] == 0 && i["num_pending"] == 0) break;
  }
  const bool ended_early = log.ended;  // nothing else acks: the rest would wait out the deadline
  stop = true;
  worker.join();
  EXPECT_FALSE(ended_early) << "the last life's worker stopped: " << log.end_reason << " (confirmed "
                            << log.confirmed_count << " of " << msgs << ")";

  EXPECT_TRUE(log.after_confirm.empty()) << log.after_confirm.size() << " deliveries of confirmed messages, first seq "
                                         << (log.after_confirm.empty() ? 0 : log.after_confirm.front());
  // Every message was confirmed, except at most one per kill whose ack went out unanswered
  // and was applied (the server reports everything acked).
  std::set<std::uint64_t> settled = log.confirmed;
  settled.insert(log.in_doubt.begin(), log.in_doubt.end());
  EXPECT_EQ(settled.size(), msgs) << "unacked messages were lost";
  if (!settled.empty()) {
    EXPECT_EQ(*settled.begin(), 1u);
    EXPECT_EQ(*settled.rbegin(), msgs);
  }
  EXPECT_LE(log.in_doubt.size(), std::size_t(rounds));
  EXPECT_EQ(i["num_ack_pending"], 0) << i;
  EXPECT_EQ(i["num_pending"], 0) << i;
  EXPECT_EQ(i["ack_floor"]["stream_seq"], msgs) << i;
  std::cerr << "deliveries " << log.deliveries << ", confirmed " << log.confirmed.size() << ", in doubt "
            << log.in_doubt.size() << "\n";
}

TEST_F(js_ack_durability, kill9_never_redelivers_a_confirmed_ack) { kill_rounds(4000, 4, 300); }

// Many acks in flight at once (group commit): every one is answered, and once answered
// none of them comes back after kill -9.
TEST_F(js_ack_durability, a_burst_of_confirmed_acks_survives_kill9) {
  constexpr int kMsgs = 500;
  ASSERT_FALSE(create({{"name", "ACKD"}, {"subjects", {"ackd.>"}}}).contains("error"));
  json c = request("$JS.API.CONSUMER.CREATE.ACKD.C",
                   json({{"stream_name", "ACKD"},
                         {"config", {{"durable_name", "C"}, {"ack_policy", "explicit"}, {"ack_wait", 1000000000}}}})
                       .dump());
  ASSERT_FALSE(c.contains("error")) << c;
  for (int i = 0; i < kMsgs; ++i) ASSERT_EQ(js_PublishAsync(js_.get(), "ackd.x", "m", 1, nullptr), NATS_OK);
  jsPubOptions po;
  jsPubOptions_Init(&po);
  po.MaxWait = 20000;
  ASSERT_EQ(js_PublishAsyncComplete(js_.get(), &po), NATS_OK);
  sub_ptr deliveries = subscribe_sync(nc_.get(), "_INBOX.burst");
  sub_ptr answers = subscribe_sync(nc_.get(), "_INBOX.answers");
  ASSERT_EQ(natsConnection_PublishRequestString(nc_.get(), "$JS.API.CONSUMER.MSG.NEXT.ACKD.C", "_INBOX.burst",
                                                json({{"batch", kMsgs}}).dump().c_str()),
            NATS_OK);
  std::vector<std::string> acks;
  for (int i = 0; i < kMsgs; ++i) {
    msg_ptr m = next_msg(deliveries.get(), 2000ms);
    ASSERT_TRUE(m) << "delivery " << i;
    acks.emplace_back(natsMsg_GetReply(m.get()));
  }
  // All acks go out before any answer is awaited.
  for (const auto& a : acks)
    ASSERT_EQ(natsConnection_PublishRequestString(nc_.get(), a.c_str(), "_INBOX.answers", "+ACK"), NATS_OK);
  for (int i = 0; i < kMsgs; ++i) ASSERT_TRUE(next_msg(answers.get(), 5000ms)) << "answer " << i;
  deliveries.reset();
  answers.reset();
  restart(true);
  json i = request("$JS.API.CONSUMER.INFO.ACKD.C");
  EXPECT_EQ(i["ack_floor"]["stream_seq"], kMsgs) << i;
  EXPECT_EQ(i["num_ack_pending"], 0) << i;
  // Past ack_wait nothing is redelivered.
  std::this_thread::sleep_for(1200ms);
  sub_ptr again = subscribe_sync(nc_.get(), "_INBOX.again");
  ASSERT_EQ(natsConnection_PublishRequestString(nc_.get(), "$JS.API.CONSUMER.MSG.NEXT.ACKD.C", "_INBOX.again",
                                                R"({"batch":10,"no_wait":true})"),
            NATS_OK);
  msg_ptr m = next_msg(again.get(), 2000ms);
  ASSERT_TRUE(m);
  const char* status = nullptr;
  natsMsgHeader_Get(m.get(), "Status", &status);
  EXPECT_STREQ(status, "404") << "a confirmed message was redelivered: " << natsMsg_GetSubject(m.get());
}

// While the consumer's state cannot be written, an ack sync is not answered; once the
// write succeeds again (the server retries), it is.
TEST_F(js_ack_durability, no_answer_while_the_state_cannot_be_written) {
  if (reference_server()) GTEST_SKIP() << "nats-server answers before writing the state";
  ASSERT_FALSE(create({{"name", "ACKD"}, {"subjects", {"ackd.>"}}}).contains("error"));
  json c = request("$JS.API.CONSUMER.CREATE.ACKD.C",
                   json({{"stream_name", "ACKD"}, {"config", {{"durable_name", "C"}, {"ack_policy", "explicit"}}}})
                       .dump());
  ASSERT_FALSE(c.contains("error")) << c;
  publish("ackd.x", "m");
  sub_ptr inbox = subscribe_sync(nc_.get(), "_INBOX.one");
  ASSERT_EQ(natsConnection_PublishRequestString(nc_.get(), "$JS.API.CONSUMER.MSG.NEXT.ACKD.C", "_INBOX.one",
                                                R"({"batch":1})"),
            NATS_OK);
  msg_ptr m = next_msg(inbox.get(), 2000ms);
  ASSERT_TRUE(m);
  // The snapshot's directory goes away: its temp file cannot be created.
  const auto dir = server_->tmp_dir() / "js/jetstream/$G/streams/ACKD/obs/C";
  ASSERT_TRUE(std::filesystem::exists(dir)) << dir;
  // The delivery's own state write may still be creating a file in it ("Directory not
  // empty" under ASan with js_threads: 2): remove until it is gone.
  for (int i = 0; i < 100 && std::filesystem::exists(dir); ++i) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  ASSERT_FALSE(std::filesystem::exists(dir)) << dir;
  sub_ptr answer = subscribe_sync(nc_.get(), "_INBOX.answer");
  ASSERT_EQ(natsConnection_PublishRequestString(nc_.get(), natsMsg_GetReply(m.get()), "_INBOX.answer", "+ACK"),
            NATS_OK);
  EXPECT_FALSE(next_msg(answer.get(), 400ms)) << "answered although nothing was written";
  std::filesystem::create_directories(dir);
  EXPECT_TRUE(next_msg(answer.get(), 3000ms)) << "no answer after the state could be written again";
  EXPECT_TRUE(std::filesystem::exists(dir / "state.cstate"));
  json i = request("$JS.API.CONSUMER.INFO.ACKD.C");
  EXPECT_EQ(i["ack_floor"]["stream_seq"], 1) << i;
}

// durability: sync: each confirming snapshot is also fdatasync'd (slower, so fewer acks).
class js_ack_durability_sync : public js_ack_durability {
 protected:
  std::string extra_conf() const override {
    return js_ack_durability::extra_conf() + (reference_server() ? "" : "durability: sync\n");
  }
};

TEST_F(js_ack_durability_sync, kill9_never_redelivers_a_confirmed_ack) {
  if (reference_server()) GTEST_SKIP() << "durability is a Peregrine option";
  kill_rounds(800, 3, 60);
}

}  // namespace
}  // namespace peregrine::test
