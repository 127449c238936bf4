#include "bench/e2e/report.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <regex>
#include <thread>

namespace peregrine::bench {

using nlohmann::ordered_json;

namespace {

double us(int64_t ns) { return std::round(static_cast<double>(ns) / 10.0) / 100.0; }

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos)
      return line.substr(line.find(':') + 2);
  return "unknown";
}

// "0-3,6": the CPUs this process may run on.
std::string affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return "unknown";
  std::string out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    int e = c;
    while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set)) ++e;
    if (!out.empty()) out += ',';
    out += e == c ? std::to_string(c) : std::to_string(c) + "-" + std::to_string(e);
    c = e;
  }
  return out;
}

// The server's INFO line (first line it sends), for version / name / JetStream; JSON or null.
ordered_json server_info(const std::string& url) {
  std::smatch m;
  static const std::regex re(R"(^(?:nats://)?(?:[^@/]*@)?([^:/,]+):([0-9]{1,5})$)");
  if (!std::regex_match(url, m, re)) return nullptr;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(std::string(m[1]).c_str(), std::string(m[2]).c_str(), &hints, &res) != 0 || res == nullptr)
    return nullptr;
  const int fd = ::socket(res->ai_family, SOCK_STREAM, 0);
  if (fd < 0) return freeaddrinfo(res), nullptr;
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  const int connected = ::connect(fd, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  std::string line;
  if (connected == 0) {
    char buf[4096];
    while (line.find('\n') == std::string::npos && line.size() < 65536) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) break;
      line.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  if (line.rfind("INFO ", 0) != 0) return nullptr;
  const auto info = nlohmann::json::parse(line.substr(5, line.find('\n') - 5), nullptr, false);
  if (info.is_discarded()) return nullptr;
  ordered_json out;
  for (const char* k : {"server_name", "version", "go", "jetstream", "max_payload"})
    if (info.contains(k)) out[k] = info[k];
  return out;
}

}  // namespace

const log_histogram& headline(const result& r) { return r.lat.corrected; }

ordered_json percentiles_json(const log_histogram& h) {
  ordered_json j;
  j["count"] = h.count();
  j["min_us"] = us(h.min());
  j["mean_us"] = std::round(h.mean() / 10.0) / 100.0;
  for (const auto& p : kPercentiles) j[p.key] = us(h.percentile(p.q));
  j["max_us"] = us(h.max());
  return j;
}

ordered_json histogram_json(const log_histogram& h) {
  ordered_json j;
  j["unit"] = "ns";
  j["sub_bucket_bits"] = log_histogram::sub_bits;
  j["count"] = h.count();
  j["min_ns"] = h.min();
  j["max_ns"] = h.max();
  ordered_json buckets = ordered_json::array();
  for (size_t i = 0; i < log_histogram::bucket_count; ++i)
    if (h.count_at(i) != 0) buckets.push_back({log_histogram::lowest_of(i), h.count_at(i)});
  j["buckets"] = std::move(buckets);
  return j;
}

bool histogram_from_json(const nlohmann::json& j, log_histogram& out) {
  out.reset();
  if (!j.is_object() || j.value("sub_bucket_bits", -1) != log_histogram::sub_bits || !j.contains("buckets") ||
      !j["buckets"].is_array())
    return false;
  for (const auto& b : j["buckets"]) {
    if (!b.is_array() || b.size() != 2 || !b[0].is_number_unsigned() || !b[1].is_number_unsigned()) return false;
    out.add_bucket(log_histogram::index_of(b[0].get<uint64_t>()), b[1].get<uint64_t>());
  }
  if (out.count() > 0 && j.contains("min_ns") && j.contains("max_ns") && j["min_ns"].is_number_integer() &&
      j["max_ns"].is_number_integer())
    out.set_min_max(j["min_ns"].get<int64_t>(), j["max_ns"].get<int64_t>());
  return true;
}

ordered_json environment_json(const config& cfg, const std::string& server_note) {
  ordered_json e;
  utsname u{};
  uname(&u);
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  e["host"] = host;
  e["cpu_model"] = cpu_model();
  e["cores"] = std::thread::hardware_concurrency();
  e["kernel"] = std::string(u.sysname) + " " + u.release;
  e["pinning"] = affinity();
  e["server"] = server_info(cfg.url);
  e["server_note"] = server_note;
  e["storage"] = cfg.file ? "file" : "memory";
  return e;
}

ordered_json report_json(const config& cfg, const result& r, const run_meta& meta) {
  const double rate = r.elapsed_s > 0 ? static_cast<double>(r.received) / r.elapsed_s : 0;
  ordered_json j;
  // Flat summary first: scripts/compare.sh reads these keys off the one-line document.
  j["mode"] = cfg.mode;
  j["url"] = cfg.url;
  j["loop"] = r.paced && !cfg.closed ? "open" : "closed";
  j["target_rate"] = r.paced && !cfg.closed ? cfg.rate * cfg.publishers : 0.0;
  j["size"] = cfg.size;
  j["count"] = cfg.count;
  j["warmup"] = cfg.warmup;
  j["publishers"] = cfg.publishers;
  j["subscribers"] = cfg.mode == "fanout" ? cfg.subscribers : cfg.mode == "throughput" ? cfg.tp_subscribers : 1;
  j["storage"] = cfg.file ? "file" : "memory";
  j["batch"] = cfg.fetch_batch;
  j["pipeline"] = cfg.pipeline;
  j["ack"] = cfg.ack_all ? "all" : "each";
  j["sent"] = r.sent;
  j["received"] = r.received;
  j["missed_sends"] = r.missed_sends;
  j["elapsed_s"] = r.elapsed_s;
  j["msgs_per_s"] = std::round(rate * 10) / 10;
  j["mb_per_s"] = std::round(rate * static_cast<double>(cfg.size) / 1e3) / 1e3;
  const log_histogram& h = headline(r);
  for (const auto& p : kPercentiles) j[p.key] = us(h.percentile(p.q));
  j["max_us"] = us(h.max());
  j["mean_us"] = std::round(h.mean() / 10.0) / 100.0;
  j["ok"] = r.error.empty();
  j["error"] = r.error;
  // Mode-specific results (js-failover's rounds, a replicated stream's placement).
  if (!r.extra_json.empty()) j["extra"] = ordered_json::parse(r.extra_json, nullptr, false);
  if (h.count() > 0) {
    // Open loop: "corrected", "uncorrected", "send_delay". Closed loop and throughput modes
    // have no schedule to correct against: one "measured" histogram.
    const bool open = r.paced && !cfg.closed;
    ordered_json lat;
    ordered_json hs;
    lat[open ? "corrected" : "measured"] = percentiles_json(r.lat.corrected);
    hs[open ? "corrected" : "measured"] = histogram_json(r.lat.corrected);
    if (open) {
      lat["uncorrected"] = percentiles_json(r.lat.uncorrected);
      lat["send_delay"] = percentiles_json(r.lat.send_delay);
      hs["uncorrected"] = histogram_json(r.lat.uncorrected);
      hs["send_delay"] = histogram_json(r.lat.send_delay);
    }
    j["latency"] = std::move(lat);
    j["histograms"] = std::move(hs);
  }
  ordered_json ts = ordered_json::array();
  for (const auto& p : r.series)
    ts.push_back({{"t_s", p.t_s}, {"count", p.count}, {"rate", std::round(p.rate * 10) / 10},
                  {"p50_us", us(p.p50_ns)}, {"p99_us", us(p.p99_ns)}, {"max_us", us(p.max_ns)}});
  j["interval_s"] = cfg.interval_s;
  j["time_series"] = std::move(ts);
  j["environment"] = environment_json(cfg, meta.server_note);
  j["command"] = meta.command;
  return j;
}

std::string hgrm_text(const log_histogram& h) {
  std::string out;
  char line[160];
  std::snprintf(line, sizeof line, "%12s %14s %10s %14s\n\n", "Value", "Percentile", "TotalCount", "1/(1-Percentile)");
  out += line;
  const uint64_t n = h.count();
  auto emit = [&](double q) {
    const int64_t v = h.percentile(q);
    uint64_t below = 0;  // samples at or below v's bucket
    const size_t idx = log_histogram::index_of(static_cast<uint64_t>(v));
    for (size_t i = 0; i <= idx; ++i) below += h.count_at(i);
    if (q >= 1.0)
      std::snprintf(line, sizeof line, "%12.4f %1.12f %10llu\n", static_cast<double>(v) / 1e6, q,
                    static_cast<unsigned long long>(below));
    else
      std::snprintf(line, sizeof line, "%12.4f %1.12f %10llu %14.2f\n", static_cast<double>(v) / 1e6, q,
                    static_cast<unsigned long long>(below), 1.0 / (1.0 - q));
    out += line;
  };
  if (n > 0) {
    // 5 ticks per halving, until one more tick would pass a single sample's share.
    for (int half = 0; half < 40; ++half) {
      const double lo = 1.0 - std::ldexp(1.0, -half);
      const double step = std::ldexp(1.0, -half - 1) / 5.0;
      for (int t = 0; t < 5; ++t) emit(lo + step * t);
      if (std::ldexp(1.0, -half - 1) * static_cast<double>(n) < 1.0) break;
    }
    emit(1.0);
  }
  double var = 0;
  for (size_t i = 0; i < log_histogram::bucket_count; ++i)
    if (h.count_at(i) != 0) {
      const double mid = static_cast<double>(log_histogram::lowest_of(i) + log_histogram::highest_of(i)) / 2;
      var += static_cast<double>(h.count_at(i)) * (mid - h.mean()) * (mid - h.mean());
    }
  const double sd = n > 1 ? std::sqrt(var / static_cast<double>(n)) : 0;
  std::snprintf(line, sizeof line, "#[Mean    = %12.4f, StdDeviation   = %12.4f]\n", h.mean() / 1e6, sd / 1e6);
  out += line;
  std::snprintf(line, sizeof line, "#[Max     = %12.4f, Total count    = %12llu]\n", static_cast<double>(h.max()) / 1e6,
                static_cast<unsigned long long>(n));
  out += line;
  std::snprintf(line, sizeof line, "#[Buckets = %12zu, SubBuckets     = %12llu]\n", log_histogram::bucket_count,
                static_cast<unsigned long long>(log_histogram::half));
  out += line;
  return out;
}

void print_human(const config& cfg, const result& r) {
  const double rate = r.elapsed_s > 0 ? static_cast<double>(r.received) / r.elapsed_s : 0;
  const bool open = r.paced && !cfg.closed;
  std::printf("peregrine-bench mode=%s url=%s size=%zu count=%llu warmup=%llu publishers=%d", cfg.mode.c_str(),
              cfg.url.c_str(), cfg.size, static_cast<unsigned long long>(cfg.count),
              static_cast<unsigned long long>(cfg.warmup), cfg.publishers);
  if (open) std::printf(" loop=open rate=%.0f/s per publisher", cfg.rate);
  if (r.paced && cfg.closed) std::printf(" loop=closed");
  if (cfg.mode == "throughput") std::printf(" subscribers=%d", cfg.tp_subscribers);
  if (cfg.mode == "fanout") std::printf(" subscribers=%d", cfg.subscribers);
  if (cfg.mode == "js-fetch") std::printf(" batch=%d ack=%s", cfg.fetch_batch, cfg.ack_all ? "all" : "each");
  if (cfg.mode == "js-batch" || cfg.mode == "js-fast") std::printf(" batch=%d pipeline=%d", cfg.fetch_batch, cfg.pipeline);
  if (cfg.mode.rfind("js-", 0) == 0) std::printf(" storage=%s", cfg.file ? "file" : "memory");
  std::printf("\n  messages: sent %llu received %llu in %.3f s\n", static_cast<unsigned long long>(r.sent),
              static_cast<unsigned long long>(r.received), r.elapsed_s);
  std::printf("  rate:     %.0f msgs/s  %.2f MB/s\n", rate, rate * static_cast<double>(cfg.size) / 1e6);
  const char* what = cfg.mode == "js-fetch"             ? "per fetch call"
                     : cfg.mode == "js-batch"           ? "per batch, first send -> commit PubAck"
                     : cfg.mode == "js-fast"            ? "per batch, first send -> final PubAck"
                     : cfg.mode == "js-consume-latency" ? "publish -> delivery"
                     : cfg.mode == "latency"            ? "one-way"
                     : cfg.mode == "fanout"             ? "publish -> every subscriber has it"
                     : cfg.mode == "throughput"         ? "one-way under load"
                                                        : "round trip";
  if (r.lat.corrected.count() > 0) {
    std::printf("  latency (%s, us):\n  %-14s", what, "");
    for (const auto& p : kPercentiles) std::printf(" %10s", p.label);
    std::printf(" %10s %10s\n", "max", "mean");
    auto row = [](const char* name, const log_histogram& h) {
      std::printf("  %-14s", name);
      for (const auto& p : kPercentiles) std::printf(" %10.1f", static_cast<double>(h.percentile(p.q)) / 1e3);
      std::printf(" %10.1f %10.1f\n", static_cast<double>(h.max()) / 1e3, h.mean() / 1e3);
    };
    if (open) {
      row("corrected", r.lat.corrected);
      row("uncorrected", r.lat.uncorrected);
      row("send delay", r.lat.send_delay);
      if (r.missed_sends > 0)
        std::printf("  note: %llu scheduled sends were still unsent when --duration ended (not in the figures)\n",
                    static_cast<unsigned long long>(r.missed_sends));
      // Sends fall behind either because replies are slow (what correction is for) or because
      // the client itself cannot keep the schedule; a late median means the latter.
      if (r.lat.send_delay.percentile(0.5) > std::max<int64_t>(r.lat.uncorrected.percentile(0.5), 1'000'000 / std::max(1, static_cast<int>(cfg.rate))))
        std::printf("  note: the median send was %.1f us late: --rate %.0f was not kept (one message in flight per\n"
                    "        publisher needs rate x round trip < 1: add --publishers; or the client is CPU-starved)\n",
                    static_cast<double>(r.lat.send_delay.percentile(0.5)) / 1e3, cfg.rate);
    } else {
      row("measured", r.lat.corrected);
    }
  }
  if (!r.error.empty()) std::printf("  ERROR: %s\n", r.error.c_str());
}

}  // namespace peregrine::bench
