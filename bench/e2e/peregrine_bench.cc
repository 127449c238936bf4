// peregrine-bench: end-to-end benchmark of any NATS server (Peregrine or nats-server) over libnats.
//   latency     pub and sub on two connections, one-way latency     } open loop at --rate per
//   rr          request/reply against a responder on another conn.  } publisher (corrected and
//   js-mem/file JetStream sync publish -> PubAck                     } uncorrected), or --closed
//   throughput  N publishers -> 1 subscriber, msgs/s and MB/s measured at the subscriber
//   js-*        JetStream publish (js-mem, js-file, js-async-*) and consumer modes (js-fetch,
//               js-consume-latency, js-ack-rtt; see js_consumer_modes.cc), js-batch (atomic
//               batches of --batch messages) and js-fast (fast-ingest batches; js_batch_mode.cc)
#include <CLI/CLI.hpp>
#include <nats/nats.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench/e2e/client.h"
#include "bench/e2e/modes.h"
#include "bench/e2e/compare.h"
#include "bench/e2e/report.h"
#include "bench/e2e/svg_plot.h"

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
      std::fprintf(stderr, "\r[%s] %llu/%llu msgs  %.0f msgs/s", mode_.c_str(),
                   static_cast<unsigned long long>(done), static_cast<unsigned long long>(p_.total.load()),
                   rate);
      if (p_.has_series) {
        const series_point pt = p_.series.last();
        if (pt.count > 0)
          std::fprintf(stderr, "  last %.0fs: p50 %.1f us  p99 %.1f us  max %.1f us", pt.t_s,
                       static_cast<double>(pt.p50_ns) / 1e3, static_cast<double>(pt.p99_ns) / 1e3,
                       static_cast<double>(pt.max_ns) / 1e3);
      }
      std::fprintf(stderr, "      ");
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

// The exact command line, each argument shell-quoted when it needs it.
std::string command_line(int argc, char** argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (!out.empty()) out += ' ';
    if (!a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,@+") == std::string::npos) {
      out += a;
    } else {
      out += '\'';
      for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
      out += '\'';
    }
  }
  return out;
}

bool write_file(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  return std::fclose(f) == 0 && ok;
}

}  // namespace

int main(int argc, char** argv) {
  config cfg;
  bool json = false;
  bool quiet = false;
  CLI::App app{"peregrine-bench: end-to-end NATS benchmark (latency, request/reply, throughput, JetStream) over libnats"};
  app.add_option("--url", cfg.url, "server URL")->capture_default_str();
  app.add_option("--tls-ca", cfg.tls_ca, "connect with TLS, trusting this CA file (not raw-throughput)")
      ->check(CLI::ExistingFile);
  app.add_option("--mode", cfg.mode,
                 "latency | rr | throughput | raw-throughput | js-mem | js-file | js-async-mem | js-async-file | "
                 "js-fetch | js-consume-latency | js-ack-rtt | js-batch | js-fast | fanout | kv-put | kv-get | js-direct-get | js-push-latency | js-ordered-latency | pubsub-pipelined | js-failover")
      ->check(CLI::IsMember({"latency", "rr", "throughput", "raw-throughput", "js-mem", "js-file",
                             "js-async-mem", "js-async-file", "js-fetch", "js-consume-latency", "js-ack-rtt",
                             "js-batch", "js-fast", "fanout", "kv-put", "kv-get", "js-direct-get", "js-push-latency",
                             "js-ordered-latency", "pubsub-pipelined", "js-failover"}))
      ->capture_default_str();
  app.add_option("--count", cfg.count, "measured messages / requests (open loop: also bounded by --duration)")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--size", cfg.size, "payload bytes (>= 16: the throughput modes carry a timestamp)")
      ->check(CLI::Range(size_t{16}, size_t{64} << 20))
      ->capture_default_str();
  app.add_option("--warmup", cfg.warmup, "unmeasured messages sent first")->capture_default_str();
  app.add_option("--duration", cfg.duration_s, "measured phase, seconds: open loop runs this long (or to --count), closed loop at most this long")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--publishers", cfg.publishers, "publisher connections, one message in flight each (latency, rr, js-mem, js-file; throughput: flat out)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--subject", cfg.subject, "subject prefix")->capture_default_str();
  app.add_option("--stream", cfg.stream,
                 "JetStream modes: the stream's name (default PGBENCH_<MODE>; several runs at once need their own)");
  std::string storage = "memory";
  std::string ack = "each";
  app.add_option("--storage", storage, "stream / bucket storage for the JetStream and KV modes (js-file: file)")
      ->check(CLI::IsMember({"memory", "file"}))
      ->capture_default_str();
  app.add_option("--batch", cfg.fetch_batch, "js-fetch: messages per fetch; js-batch/js-fast: messages per batch")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--ack", ack, "js-fetch: ack each message (ack_policy explicit) or the last of each batch (all)")
      ->check(CLI::IsMember({"each", "all"}))
      ->capture_default_str();
  app.add_option("--pipeline", cfg.pipeline,
                 "js-batch/js-fast: batches in flight from a raw-socket publisher that pre-encodes its messages "
                 "(0: one at a time through libnats)")
      ->check(CLI::Range(0, 50))
      ->capture_default_str();
  app.add_option("--rate", cfg.rate, "open loop: intended msgs/s per publisher (every latency mode; see README)")
      ->check(CLI::Range(0.001, 1e7))
      ->capture_default_str();
  app.add_flag("--closed", cfg.closed, "closed loop: send the next message as soon as the previous completes");
  app.add_option("--interval", cfg.interval_s, "time series interval, seconds")
      ->check(CLI::Range(0.01, 3600.0))
      ->capture_default_str();
  app.add_option("--subscribers", cfg.subscribers, "fanout: subscriber connections (throughput: see --tp-subscribers)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--tp-subscribers", cfg.tp_subscribers, "throughput: subscriber connections, each gets every message")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--keys", cfg.keys, "kv-get, js-direct-get: distinct keys read round robin")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  app.add_option("--replicas", cfg.replicas, "JetStream modes: the stream's num_replicas (a cluster; js-failover: 3 by default)")
      ->check(CLI::Range(1, 5));
  app.add_option("--server-names", cfg.server_names,
                 "server_name of each --url server, comma separated in the same order (--place, js-failover)");
  app.add_option("--place", cfg.place, "replicated stream: put the client on its leader or a follower")
      ->check(CLI::IsMember({"any", "leader", "follower"}))
      ->capture_default_str();
  app.add_option("--rounds", cfg.rounds, "js-failover: leader kills (the driving script does them; see bench/cluster_compare.sh)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--pub-timeout", cfg.pub_timeout_ms,
                 "js-failover: ms a publish waits for its PubAck before it is retried (a lost request costs this)")
      ->check(CLI::Range(10, 60000))
      ->capture_default_str();
  std::string hgrm_path;
  app.add_option("--hgrm", hgrm_path, "write the (corrected) percentile spectrum in HdrHistogram .hgrm format");
  std::string svg_path, time_svg_path;
  app.add_option("--svg", svg_path, "write the percentile spectrum plot (corrected and uncorrected) as SVG");
  app.add_option("--time-svg", time_svg_path, "write latency over time (p50, p99, max per --interval) as SVG");
  bool linear_y = false;
  app.add_flag("--linear-y", linear_y, "--svg: linear latency axis from 0 (default: log, latency spans decades)");
  compare_options cmp;
  CLI::App* compare = app.add_subcommand("compare", "compare saved --json reports: percentile and rate ratios, plots");
  compare->add_option("reports", cmp.files, "report files (the first is the baseline)")->required()->check(CLI::ExistingFile);
  compare->add_option("--svg", cmp.svg, "write the overlaid percentile spectra as SVG");
  compare->add_option("--time-svg", cmp.time_svg, "write every run's latency over time as SVG");
  compare->add_flag("--linear-y", cmp.linear_y, "--svg: linear latency axis from 0 (default: log)");
  run_meta meta;
  app.add_option("--server-note", meta.server_note,
                 "recorded in the JSON environment: how the server runs (flags, storage, durability point)");
  app.add_flag("--json", json, "print the full JSON report (one line) instead of text");
  app.add_flag("--quiet", quiet, "no progress line on stderr");
  CLI11_PARSE(app, argc, argv);
  if (compare->parsed()) return run_compare(cmp);
  cfg.file = storage == "file" || cfg.mode == "js-file" || cfg.mode == "js-async-file";
  cfg.ack_all = ack == "all";
  if (cfg.mode == "js-failover" && app.count("--replicas") == 0) cfg.replicas = 3;

  if (nats_Open(-1) != NATS_OK) {
    std::fprintf(stderr, "peregrine-bench: cannot initialise libnats\n");
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
    else if (cfg.mode == "js-fast")
      r = run_js_fast_batch(cfg, prog);
    else if (cfg.mode == "fanout")
      r = run_fanout(cfg, prog);
    else if (cfg.mode == "kv-put" || cfg.mode == "kv-get")
      r = run_kv(cfg, prog, cfg.mode == "kv-get");
    else if (cfg.mode == "pubsub-pipelined")
      r = run_pubsub_pipelined(cfg, prog);
    else if (cfg.mode == "js-push-latency" || cfg.mode == "js-ordered-latency")
      r = run_js_push(cfg, prog, cfg.mode == "js-ordered-latency");
    else if (cfg.mode == "js-failover")
      r = run_js_failover(cfg, prog);
    else if (cfg.mode == "js-direct-get")
      r = run_js_direct_get(cfg, prog);
    else if (cfg.mode == "raw-throughput" && !cfg.tls_ca.empty())
      r.error = "raw-throughput speaks plaintext sockets: no --tls-ca";
    else if (cfg.mode == "raw-throughput")
      r = run_raw_throughput(cfg, prog);
    else
      r = run_throughput(cfg, prog);
  }
  // Throughput-style modes keep raw samples; fold them into the histogram the reports read.
  for (int64_t v : r.samples_ns) r.lat.corrected.record(v);
  if (r.extra_json.empty()) r.extra_json = last_placement_json();
  r.samples_ns.clear();
  meta.command = command_line(argc, argv);
  if (json)
    std::printf("%s\n", report_json(cfg, r, meta).dump().c_str());
  else
    print_human(cfg, r);
  const std::string title = cfg.mode + " " + (r.paced && !cfg.closed ? "open loop" : "closed loop");
  std::vector<spectrum_run> spectra{{r.paced && !cfg.closed ? "corrected" : "measured", &r.lat.corrected}};
  if (r.paced && !cfg.closed) spectra.push_back({"uncorrected", &r.lat.uncorrected});
  const std::pair<std::string, std::string> outputs[] = {
      {hgrm_path, hgrm_path.empty() ? "" : hgrm_text(r.lat.corrected)},
      {svg_path, svg_path.empty() ? "" : percentile_spectrum_svg(title, spectra, linear_y ? y_scale::linear : y_scale::log)},
      {time_svg_path, time_svg_path.empty() ? "" : latency_over_time_svg(title, {{cfg.mode, &r.series}})}};
  for (const auto& [path, text] : outputs)
    if (!path.empty() && !write_file(path, text)) {
      std::fprintf(stderr, "peregrine-bench: cannot write %s\n", path.c_str());
      return 2;
    }
  nats_Close();
  return r.error.empty() ? 0 : 1;
}
