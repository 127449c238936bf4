#include "bench/e2e/compare.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "bench/e2e/report.h"
#include "bench/e2e/svg_plot.h"

namespace peregrine::bench {
namespace {

struct loaded_run {
  std::string label;
  nlohmann::json doc;
  log_histogram hist;  // corrected (or the only) latency histogram
  std::vector<series_point> series;
};

bool load(const std::string& path, loaded_run& out, std::string& err) {
  std::ifstream in(path);
  if (!in) return err = "cannot open " + path, false;
  std::stringstream ss;
  ss << in.rdbuf();
  // A report is one line; take the first that parses (compare.sh files hold exactly one).
  out.doc = nlohmann::json::parse(ss.str(), nullptr, false);
  if (out.doc.is_discarded() || !out.doc.is_object()) return err = path + ": not a peregrine-bench JSON report", false;
  out.label = std::filesystem::path(path).stem().string();
  const auto& hs = out.doc["histograms"];
  // Open-loop reports lead with "corrected", closed-loop ones have only "measured".
  for (const char* key : {"corrected", "measured"})
    if (hs.is_object() && hs.contains(key)) {
      if (!histogram_from_json(hs[key], out.hist)) return err = path + ": malformed histogram", false;
      break;
    }
  if (out.doc.contains("time_series") && out.doc["time_series"].is_array())
    for (const auto& p : out.doc["time_series"]) {
      if (!p.is_object()) continue;
      series_point sp;
      sp.t_s = p.value("t_s", 0.0);
      sp.count = p.value("count", uint64_t{0});
      sp.rate = p.value("rate", 0.0);
      sp.p50_ns = static_cast<int64_t>(p.value("p50_us", 0.0) * 1e3);
      sp.p99_ns = static_cast<int64_t>(p.value("p99_us", 0.0) * 1e3);
      sp.max_ns = static_cast<int64_t>(p.value("max_us", 0.0) * 1e3);
      out.series.push_back(sp);
    }
  return true;
}

double number_or(const nlohmann::json& j, const char* key, double dflt) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : dflt;
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  return static_cast<bool>(out);
}

}  // namespace

int run_compare(const compare_options& opts) {
  std::vector<loaded_run> runs(opts.files.size());
  for (size_t i = 0; i < opts.files.size(); ++i) {
    std::string err;
    if (!load(opts.files[i], runs[i], err)) {
      std::fprintf(stderr, "peregrine-bench compare: %s\n", err.c_str());
      return 2;
    }
  }
  // Header: metric, one column per run, then <run>/<first> ratios.
  std::printf("%-12s", "metric");
  for (size_t i = 0; i < runs.size(); ++i) std::printf(" %14s", ("#" + std::to_string(i + 1)).c_str());
  for (size_t i = 1; i < runs.size(); ++i) std::printf(" %9s", ("#" + std::to_string(i + 1) + "/#1").c_str());
  std::printf("\n");
  auto row = [&](const char* name, auto value) {
    std::printf("%-12s", name);
    std::vector<double> v;
    for (const auto& r : runs) {
      v.push_back(value(r));
      if (v.back() < 0) std::printf(" %14s", "-");
      else std::printf(" %14.2f", v.back());
    }
    for (size_t i = 1; i < runs.size(); ++i) {
      if (v[0] > 0 && v[i] >= 0) std::printf(" %9.2f", v[i] / v[0]);
      else std::printf(" %9s", "-");
    }
    std::printf("\n");
  };
  row("msgs_per_s", [](const loaded_run& r) { return number_or(r.doc, "msgs_per_s", -1); });
  for (const auto& p : kPercentiles)
    row(p.key, [&](const loaded_run& r) {
      return r.hist.count() > 0 ? static_cast<double>(r.hist.percentile(p.q)) / 1e3 : number_or(r.doc, p.key, -1);
    });
  row("max_us", [](const loaded_run& r) {
    return r.hist.count() > 0 ? static_cast<double>(r.hist.max()) / 1e3 : number_or(r.doc, "max_us", -1);
  });
  std::printf("(latencies in us, corrected for coordinated omission in open-loop runs)\n");
  for (size_t i = 0; i < runs.size(); ++i)
    std::printf("  #%zu %s: mode %s, loop %s, %s\n", i + 1, runs[i].label.c_str(), runs[i].doc.value("mode", "?").c_str(),
                runs[i].doc.value("loop", "?").c_str(), runs[i].doc.value("command", "").c_str());

  if (!opts.svg.empty()) {
    std::vector<spectrum_run> sr;
    for (const auto& r : runs) sr.push_back({r.label, &r.hist});
    if (!write_file(opts.svg, percentile_spectrum_svg("latency by percentile", sr, opts.linear_y ? y_scale::linear : y_scale::log))) {
      std::fprintf(stderr, "peregrine-bench compare: cannot write %s\n", opts.svg.c_str());
      return 2;
    }
  }
  if (!opts.time_svg.empty()) {
    std::vector<series_run> tr;
    for (const auto& r : runs) tr.push_back({r.label, &r.series});
    if (!write_file(opts.time_svg, latency_over_time_svg("latency over time", tr))) {
      std::fprintf(stderr, "peregrine-bench compare: cannot write %s\n", opts.time_svg.c_str());
      return 2;
    }
  }
  return 0;
}

}  // namespace peregrine::bench
