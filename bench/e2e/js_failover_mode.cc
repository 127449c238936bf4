// js-failover: how long a replicated stream stops acknowledging when its leader is killed, and
// whether every acknowledged publish survives. A publisher thread publishes synchronously with
// a Nats-Msg-Id per message, retrying as an application would (timeout, no responders, 10008,
// reconnecting to the other --url servers). The main thread runs the rounds with the driving
// script over stdin/stdout (bench/cluster_compare.sh):
//   bench -> "@kill <server_name>"      script kill -9s it -> "killed <unix ns after the kill>"
//   bench -> "@restart <server_name>"   script restarts it -> "restarted"
// then waits until the restarted server is a current replica again. At the end every message is
// read back through an ordered consumer and checked against the acks (failover.h).
#include <nats/nats.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/e2e/client.h"
#include "bench/e2e/failover.h"
#include "bench/e2e/modes.h"

namespace peregrine::bench {
namespace {

int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// Every --url server, reconnecting without limit, as an application would; 100 ms between
// attempts (libnats' default is 2 s, which would be the client's delay, not the server's).
nc_ptr open_reconnecting(const config& cfg, std::string& err) {
  natsOptions* opts = nullptr;
  natsStatus s = natsOptions_Create(&opts);
  if (s == NATS_OK) s = set_urls(opts, cfg.url);
  if (s == NATS_OK) s = natsOptions_SetMaxReconnect(opts, -1);
  if (s == NATS_OK) s = natsOptions_SetReconnectWait(opts, 100);
  if (s == NATS_OK) s = natsOptions_SetTimeout(opts, 2000);
  if (s == NATS_OK) s = natsOptions_SetSendAsap(opts, true);
  if (s == NATS_OK && !cfg.tls_ca.empty()) s = natsOptions_SetSecure(opts, true);
  if (s == NATS_OK && !cfg.tls_ca.empty()) s = natsOptions_LoadCATrustedCertificates(opts, cfg.tls_ca.c_str());
  natsConnection* nc = nullptr;
  if (s == NATS_OK) s = natsConnection_Connect(&nc, opts);
  natsOptions_Destroy(opts);
  if (s != NATS_OK) err = err_text("connect " + cfg.url, s);
  return s == NATS_OK ? nc_ptr(nc) : nullptr;
}

struct publisher {
  std::mutex mu;
  std::vector<ack_record> acks;  // completion order
  std::atomic<uint64_t> attempts{0}, timeouts{0}, no_responders{0}, unavailable{0}, other{0};
  std::atomic<bool> stop{false};
  std::string last_error;

  size_t ack_count() {
    std::lock_guard<std::mutex> g(mu);
    return acks.size();
  }
  std::vector<ack_record> acks_from(size_t first) {
    std::lock_guard<std::mutex> g(mu);
    return {acks.begin() + static_cast<std::ptrdiff_t>(std::min(first, acks.size())), acks.end()};
  }

  void run(jsCtx* js, const std::string& subject, size_t size, int64_t timeout_ms, progress& prog) {
    uint64_t index = 0;
    while (!stop) {
      const std::string id = index_text(index);
      std::string payload = id + ' ';
      if (payload.size() < size) payload.resize(size, '.');
      jsPubOptions po;
      jsPubOptions_Init(&po);
      po.MsgId = id.c_str();  // a retry of a stored attempt is deduplicated to its first sequence
      po.MaxWait = timeout_ms;
      jsPubAck* pa = nullptr;
      jsErrCode jerr = static_cast<jsErrCode>(0);
      ++attempts;
      const int64_t t0 = wall_ns();
      const natsStatus st =
          js_Publish(&pa, js, subject.c_str(), payload.data(), static_cast<int>(payload.size()), &po, &jerr);
      const int64_t t1 = wall_ns();
      if (st == NATS_OK && pa != nullptr) {
        std::lock_guard<std::mutex> g(mu);
        acks.push_back({index, pa->Sequence, t0, t1});
        prog.done = acks.size();
        ++index;
      } else {
        if (st == NATS_TIMEOUT)
          ++timeouts;
        else if (st == NATS_NO_RESPONDERS)
          ++no_responders;
        else if (jerr == 10008)
          ++unavailable;
        else
          ++other;
        {
          std::lock_guard<std::mutex> g(mu);
          last_error = err_text("publish (err_code " + std::to_string(jerr) + ")", st);
        }
        sleep_ms(20);  // the server said no (or is gone): do not spin
      }
      if (pa) jsPubAck_Destroy(pa);
    }
  }
};

struct cluster_view {
  std::string leader;
  bool all_current = false;  // every listed replica current and online
  bool has_peer(const std::string& name, bool current) const {
    for (const auto& [n, c] : peers)
      if (n == name && (c || !current)) return true;
    return false;
  }
  std::vector<std::pair<std::string, bool>> peers;  // replicas other than the leader: name, current
  uint64_t last_seq = 0;
};

cluster_view view_of(jsCtx* js, const std::string& stream) {
  cluster_view v;
  jsStreamInfo* si = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  jsOptions o;
  jsOptions_Init(&o);
  o.Wait = 1000;
  if (js_GetStreamInfo(&si, js, stream.c_str(), &o, &jerr) != NATS_OK || si == nullptr) return v;
  v.last_seq = si->State.LastSeq;
  if (si->Cluster != nullptr) {
    if (si->Cluster->Leader != nullptr) v.leader = si->Cluster->Leader;
    v.all_current = !v.leader.empty();
    for (int i = 0; i < si->Cluster->ReplicasLen; ++i) {
      const jsPeerInfo* p = si->Cluster->Replicas[i];
      v.peers.emplace_back(p->Name ? p->Name : "", p->Current && !p->Offline);
      v.all_current = v.all_current && p->Current && !p->Offline;
    }
  }
  jsStreamInfo_Destroy(si);
  return v;
}

// Polls `done` every 20 ms until it holds or timeout_s passes.
template <typename F>
bool wait_for(double timeout_s, F done) {
  const int64_t deadline = wall_ns() + static_cast<int64_t>(timeout_s * 1e9);
  while (!done()) {
    if (wall_ns() > deadline) return false;
    sleep_ms(20);
  }
  return true;
}

bool ask_script(const std::string& command, const std::string& expect, std::string& reply) {
  std::printf("@%s\n", command.c_str());
  std::fflush(stdout);
  if (!std::getline(std::cin, reply)) return false;
  return reply.rfind(expect, 0) == 0;
}

// Reads the stream back message by message (STREAM.MSG.GET): sequence -> message index.
std::string read_back_by_get(jsCtx* js, const std::string& stream, uint64_t last_seq,
                             std::map<uint64_t, uint64_t>& stored) {
  for (uint64_t seq = 1; seq <= last_seq; ++seq) {
    natsMsg* m = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    const natsStatus st = js_GetMsg(&m, js, stream.c_str(), seq, nullptr, &jerr);
    if (st == NATS_NOT_FOUND || jerr == 10037) continue;  // no message at seq
    if (st != NATS_OK) return err_text("read-back get of sequence " + std::to_string(seq), st);
    uint64_t idx = 0;
    if (parse_index(natsMsg_GetData(m), natsMsg_GetDataLength(m), idx)) stored[seq] = idx;
    natsMsg_Destroy(m);
  }
  return {};
}

// Reads the stream back through an ordered consumer (by MSG.GET where the server cannot make
// one on a replicated stream): sequence -> message index; `via` says which.
std::string read_back(jsCtx* js, const std::string& stream, const std::string& filter, uint64_t last_seq,
                      std::map<uint64_t, uint64_t>& stored, std::string& via) {
  jsSubOptions so;
  jsSubOptions_Init(&so);
  so.Stream = stream.c_str();
  so.Ordered = true;
  natsSubscription* raw = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus st = js_SubscribeSync(&raw, js, filter.c_str(), nullptr, &so, &jerr);
  via = "ordered consumer";
  if (st != NATS_OK) {
    via = "msg get (ordered consumer: " + err_text("err_code " + std::to_string(jerr), st) + ")";
    return read_back_by_get(js, stream, last_seq, stored);
  }
  sub_ptr sub(raw);
  uint64_t seen = 0;
  while (seen < last_seq) {
    natsMsg* m = nullptr;
    st = natsSubscription_NextMsg(&m, sub.get(), 5000);
    if (st != NATS_OK) return err_text("read-back at sequence " + std::to_string(seen + 1), st);
    jsMsgMetaData* meta = nullptr;
    if (natsMsg_GetMetaData(&meta, m) == NATS_OK) {
      seen = meta->Sequence.Stream;
      uint64_t idx = 0;
      if (parse_index(natsMsg_GetData(m), natsMsg_GetDataLength(m), idx)) stored[seen] = idx;
      jsMsgMetaData_Destroy(meta);
    }
    natsMsg_Destroy(m);
  }
  return {};
}

double ms(int64_t ns) { return ns < 0 ? -1.0 : static_cast<double>(ns / 1000) / 1000.0; }

}  // namespace

result run_js_failover(const config& cfg, progress& prog) {
  result r;
  js_session s;
  const std::string subject = cfg.subject + ".fo";
  r.error = open_stream(cfg, cfg.file, 1, s, subject, "FAILOVER");
  if (!r.error.empty()) return r;
  const std::string stream = s.stream;
  nc_ptr pub_nc = open_reconnecting(cfg, r.error);
  if (!pub_nc) return r;
  nc_ptr ctl_nc = open_reconnecting(cfg, r.error);
  if (!ctl_nc) return r;
  jsCtx* raw = nullptr;
  if (natsConnection_JetStream(&raw, pub_nc.get(), nullptr) != NATS_OK) return r.error = "no JetStream context", r;
  js_ptr pub_js(raw);
  if (natsConnection_JetStream(&raw, ctl_nc.get(), nullptr) != NATS_OK) return r.error = "no JetStream context", r;
  js_ptr ctl_js(raw);
  s.stream.clear();  // deleted below through the reconnecting connection
  s.js.reset();
  s.nc.reset();

  publisher pub;
  prog.total = 0;
  const int64_t start_ns = wall_ns();
  std::thread pub_thread([&] { pub.run(pub_js.get(), subject + ".x", cfg.size, cfg.pub_timeout_ms, prog); });
  nlohmann::ordered_json rounds = nlohmann::ordered_json::array();
  std::vector<int64_t> gaps, elections;
  for (int round = 1; round <= cfg.rounds && r.error.empty(); ++round) {
    // Steady before each kill: a leader, every replica current, and acks flowing.
    const size_t before = pub.ack_count();
    cluster_view v;
    if (!wait_for(120, [&] {
          v = view_of(ctl_js.get(), stream);
          return v.all_current && pub.ack_count() >= before + 20;
        })) {
      r.error = "round " + std::to_string(round) + ": no steady cluster (leader, replicas current, acks) within 120 s" +
                (v.leader.empty() ? "" : " (leader " + v.leader + ")");
      break;
    }
    const std::string victim = v.leader;
    const size_t at_kill = pub.ack_count();
    std::string reply;
    if (!ask_script("kill " + victim, "killed ", reply)) {
      r.error = "driving script: no 'killed' reply (" + reply + ")";
      break;
    }
    const int64_t kill_ns = std::stoll(reply.substr(7));
    int64_t gap = -1;
    wait_for(120, [&] { return (gap = failover_gap_ns(pub.acks_from(at_kill), kill_ns)) >= 0; });
    // The new leader as STREAM.INFO names it: the server-side election, give or take a poll.
    std::string new_leader;
    int64_t leader_seen_ns = -1;
    if (wait_for(30, [&] {
          new_leader = view_of(ctl_js.get(), stream).leader;
          return !new_leader.empty() && new_leader != victim;
        }))
      leader_seen_ns = wall_ns() - kill_ns;
    if (!ask_script("restart " + victim, "restarted", reply)) {
      r.error = "driving script: no 'restarted' reply (" + reply + ")";
      break;
    }
    const int64_t restarted_ns = wall_ns();
    const bool rejoined = wait_for(120, [&] {
      const cluster_view w = view_of(ctl_js.get(), stream);
      return w.leader == victim || w.has_peer(victim, true);
    });
    const int64_t rejoin_ns = wall_ns() - restarted_ns;
    gaps.push_back(gap);
    elections.push_back(leader_seen_ns);
    rounds.push_back({{"round", round}, {"killed", victim}, {"kill_to_ack_ms", ms(gap)},
                      {"new_leader", new_leader}, {"leader_seen_ms", ms(leader_seen_ns)}, {"rejoin_s", rejoined ? ms(rejoin_ns) / 1e3 : -1.0}});
    std::fprintf(stderr, "round %d: killed %s, next ack after %.1f ms, new leader %s seen after %.1f ms, rejoined %s\n",
                 round, victim.c_str(), ms(gap), new_leader.c_str(), ms(leader_seen_ns), rejoined ? "yes" : "NO (120 s)");
    if (gap < 0) r.error = "round " + std::to_string(round) + ": no acknowledged publish within 120 s of the kill";
    else if (!rejoined) r.error = "round " + std::to_string(round) + ": " + victim + " not a current replica within 120 s";
  }
  // A little steady traffic after the last round, then stop and read everything back.
  const size_t tail = pub.ack_count();
  wait_for(10, [&] { return pub.ack_count() >= tail + 20; });
  pub.stop = true;
  pub_thread.join();
  r.elapsed_s = static_cast<double>(wall_ns() - start_ns) / 1e9;
  const std::vector<ack_record> acks = pub.acks_from(0);
  r.sent = pub.attempts;
  r.received = acks.size();
  for (int64_t g : gaps)
    if (g >= 0) r.samples_ns.push_back(g);

  std::map<uint64_t, uint64_t> stored;
  const cluster_view end = view_of(ctl_js.get(), stream);
  std::string via;
  std::string rb_error = read_back(ctl_js.get(), stream, subject + ".>", end.last_seq, stored, via);
  const readback_result rb = check_readback(acks, stored);
  if (rb_error.empty() && !rb.ok()) rb_error = "acknowledged messages missing from the stream";
  if (r.error.empty()) r.error = rb_error;

  jsErrCode jerr = static_cast<jsErrCode>(0);
  js_DeleteStream(ctl_js.get(), stream.c_str(), nullptr, &jerr);

  nlohmann::ordered_json x;
  x["stream"] = stream;
  x["replicas"] = cfg.replicas;
  x["pub_timeout_ms"] = cfg.pub_timeout_ms;
  x["rounds"] = std::move(rounds);
  x["failover_p50_ms"] = ms(percentile_of(gaps, 0.5));
  x["failover_max_ms"] = ms(percentile_of(gaps, 1.0));
  x["leader_seen_p50_ms"] = ms(percentile_of(elections, 0.5));
  x["publish_attempts"] = pub.attempts.load();
  x["acked"] = acks.size();
  x["retries"] = {{"timeout", pub.timeouts.load()}, {"no_responders", pub.no_responders.load()},
                  {"unavailable_10008", pub.unavailable.load()}, {"other", pub.other.load()},
                  {"last_error", pub.last_error}};
  x["readback"] = {{"ok", rb_error.empty() && rb.ok()}, {"error", rb_error}, {"via", via}, {"last_seq", end.last_seq},
                   {"stored", rb.stored}, {"acked_indexes", rb.acked}, {"missing", rb.missing},
                   {"mismatched", rb.mismatched}, {"duplicates", rb.duplicates},
                   {"unacked_stored", rb.unacked_stored}, {"lost_seqs", rb.lost_seqs}};
  r.extra_json = x.dump();
  return r;
}

}  // namespace peregrine::bench
