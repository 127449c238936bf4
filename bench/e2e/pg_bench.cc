// pg-bench: end-to-end benchmark of a NATS server (Peregrine or nats-server) over libnats.
//   latency     one message in flight, pub and sub on two connections, one-way latency
//   rr          request/reply round trips against a responder on another connection
//   throughput  N publishers -> 1 subscriber, msgs/s and MB/s measured at the subscriber
//   js-*        JetStream publish (js-mem, js-file, js-async-*) and consumer modes (js-fetch,
//               js-consume-latency, js-ack-rtt; see js_consumer_modes.cc), js-batch (atomic
//               batches of --batch messages; js_batch_mode.cc)
#include <CLI/CLI.hpp>
#include <nats/nats.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "bench/e2e/modes.h"
#include "bench/e2e/stats.h"

namespace {

using namespace peregrine::bench;

// Rewrites one stderr line ("\r" style) about once a second while the run is going.
class progress_reporter {
 public:
  progress_reporter(const std::string& mode, progress& p, bool enabled) : mode_(mode), p_(p) {
    if (enabled) thread_ = std::thread([this] { loop(); });
  }
  ~progress_reporter() { finish(); }
  void finish() {
    stop_ = true;
    if (thread_.joinable()) {
      thread_.join();
      std::fprintf(stderr, "\n");
    }
  }

 private:
  void loop() {
    using clock_type = std::chrono::steady_clock;
    uint64_t last = 0;
    auto last_t = clock_type::now();
    while (!stop_) {
      for (int i = 0; i < 20 && !stop_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      const auto t = clock_type::now();
      const uint64_t done = p_.done.load();
      const double dt = std::chrono::duration<double>(t - last_t).count();
      const double rate = dt > 0 ? static_cast<double>(done - last) / dt : 0;
      std::fprintf(stderr, "\r[%s] %llu/%llu msgs  %.0f msgs/s      ", mode_.c_str(),
                   static_cast<unsigned long long>(done), static_cast<unsigned long long>(p_.total.load()),
                   rate);
      std::fflush(stderr);
      last = done;
      last_t = t;
    }
  }

  std::string mode_;
  progress& p_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

void print_human(const config& cfg, const result& r, const summary& s, double rate, double mbps) {
  std::printf("pg-bench mode=%s url=%s size=%zu count=%llu warmup=%llu", cfg.mode.c_str(), cfg.url.c_str(),
              cfg.size, static_cast<unsigned long long>(cfg.count), static_cast<unsigned long long>(cfg.warmup));
  if (cfg.mode.find("throughput") != std::string::npos) std::printf(" publishers=%d", cfg.publishers);
  if (cfg.mode == "js-fetch") std::printf(" batch=%d ack=%s", cfg.fetch_batch, cfg.ack_all ? "all" : "each");
  if (cfg.mode == "js-batch") std::printf(" batch=%d", cfg.fetch_batch);
  if (cfg.mode == "js-fetch" || cfg.mode == "js-consume-latency" || cfg.mode == "js-ack-rtt" || cfg.mode == "js-batch")
    std::printf(" storage=%s", cfg.file ? "file" : "memory");
  std::printf("\n");
  std::printf("  messages: sent %llu received %llu in %.3f s\n", static_cast<unsigned long long>(r.sent),
              static_cast<unsigned long long>(r.received), r.elapsed_s);
  std::printf("  rate:     %.0f msgs/s  %.2f MB/s\n", rate, mbps);
  const char* what = cfg.mode == "js-fetch"             ? "per fetch call"
                     : cfg.mode == "js-batch"           ? "per batch, first send -> commit PubAck"
                     : cfg.mode == "js-consume-latency" ? "publish -> delivery"
                     : (cfg.mode == "rr" || cfg.mode.rfind("js-", 0) == 0)
                         ? "round trip"
                         : (cfg.mode == "throughput" ? "one-way under load" : "one-way");
  if (!r.samples_ns.empty())
    std::printf("  latency (%s, us): p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f  mean %.1f\n", what,
              s.p50_us, s.p90_us, s.p99_us, s.p999_us, s.max_us, s.mean_us);
  if (!r.error.empty()) std::printf("  ERROR: %s\n", r.error.c_str());
}

std::string json_escape(const std::string& in) {
  std::string out;
  for (char c : in) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out;
}

void print_json(const config& cfg, const result& r, const summary& s, double rate, double mbps) {
  std::printf(
      "{\"mode\":\"%s\",\"url\":\"%s\",\"size\":%zu,\"count\":%llu,\"warmup\":%llu,\"publishers\":%d,"
      "\"storage\":\"%s\",\"batch\":%d,\"ack\":\"%s\",\"sent\":%llu,\"received\":%llu,\"elapsed_s\":%.6f,\"msgs_per_s\":%.1f,\"mb_per_s\":%.3f,"
      "\"p50_us\":%.2f,\"p90_us\":%.2f,\"p99_us\":%.2f,\"p999_us\":%.2f,\"max_us\":%.2f,\"mean_us\":%.2f,"
      "\"ok\":%s,\"error\":\"%s\"}\n",
      cfg.mode.c_str(), json_escape(cfg.url).c_str(), cfg.size, static_cast<unsigned long long>(cfg.count),
      static_cast<unsigned long long>(cfg.warmup), cfg.publishers, cfg.file ? "file" : "memory", cfg.fetch_batch,
      cfg.ack_all ? "all" : "each", static_cast<unsigned long long>(r.sent),
      static_cast<unsigned long long>(r.received), r.elapsed_s, rate, mbps, s.p50_us, s.p90_us, s.p99_us,
      s.p999_us, s.max_us, s.mean_us, r.error.empty() ? "true" : "false", json_escape(r.error).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  config cfg;
  bool json = false;
  bool quiet = false;
  CLI::App app{"pg-bench: end-to-end NATS benchmark (latency, request/reply, throughput) over libnats"};
  app.add_option("--url", cfg.url, "server URL")->capture_default_str();
  app.add_option("--mode", cfg.mode,
                 "latency | rr | throughput | raw-throughput | js-mem | js-file | js-async-mem | js-async-file | "
                 "js-fetch | js-consume-latency | js-ack-rtt | js-batch")
      ->check(CLI::IsMember({"latency", "rr", "throughput", "raw-throughput", "js-mem", "js-file",
                             "js-async-mem", "js-async-file", "js-fetch", "js-consume-latency", "js-ack-rtt",
                             "js-batch"}))
      ->capture_default_str();
  app.add_option("--count", cfg.count, "measured messages / requests")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--size", cfg.size, "payload bytes (>= 16: carries a timestamp)")
      ->check(CLI::Range(size_t{16}, size_t{64} << 20))
      ->capture_default_str();
  app.add_option("--warmup", cfg.warmup, "unmeasured messages sent first")->capture_default_str();
  app.add_option("--duration", cfg.duration_s, "cap on the measured phase, seconds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--publishers", cfg.publishers, "publisher connections (throughput mode)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--subject", cfg.subject, "subject prefix")->capture_default_str();
  std::string storage = "memory";
  std::string ack = "each";
  app.add_option("--storage", storage, "stream storage for the consumer modes")
      ->check(CLI::IsMember({"memory", "file"}))
      ->capture_default_str();
  app.add_option("--batch", cfg.fetch_batch, "js-fetch: messages per fetch; js-batch: messages per atomic batch")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--ack", ack, "js-fetch: ack each message (ack_policy explicit) or the last of each batch (all)")
      ->check(CLI::IsMember({"each", "all"}))
      ->capture_default_str();
  app.add_flag("--json", json, "print a one-line JSON summary instead of text");
  app.add_flag("--quiet", quiet, "no progress line on stderr");
  CLI11_PARSE(app, argc, argv);
  cfg.file = storage == "file";
  cfg.ack_all = ack == "all";

  if (nats_Open(-1) != NATS_OK) {
    std::fprintf(stderr, "pg-bench: cannot initialise libnats\n");
    return 2;
  }
  progress prog;
  result r;
  {
    progress_reporter reporter(cfg.mode, prog, !quiet);
    if (cfg.mode == "latency")
      r = run_latency(cfg, prog);
    else if (cfg.mode == "rr")
      r = run_request_reply(cfg, prog);
    else if (cfg.mode == "js-mem" || cfg.mode == "js-file")
      r = run_js_publish(cfg, prog, cfg.mode == "js-file");
    else if (cfg.mode == "js-async-mem" || cfg.mode == "js-async-file")
      r = run_js_async(cfg, prog, cfg.mode == "js-async-file");
    else if (cfg.mode == "js-fetch")
      r = run_js_fetch(cfg, prog);
    else if (cfg.mode == "js-consume-latency")
      r = run_js_consume_latency(cfg, prog);
    else if (cfg.mode == "js-ack-rtt")
      r = run_js_ack_rtt(cfg, prog);
    else if (cfg.mode == "js-batch")
      r = run_js_batch(cfg, prog);
    else if (cfg.mode == "raw-throughput")
      r = run_raw_throughput(cfg, prog);
    else
      r = run_throughput(cfg, prog);
  }
  const summary s = summarize(r.samples_ns);
  const double rate = r.elapsed_s > 0 ? static_cast<double>(r.received) / r.elapsed_s : 0;
  const double mbps = rate * static_cast<double>(cfg.size) / 1e6;
  if (json)
    print_json(cfg, r, s, rate, mbps);
  else
    print_human(cfg, r, s, rate, mbps);
  nats_Close();
  return r.error.empty() ? 0 : 1;
}
