#include "bench/e2e/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace peregrine::bench {
namespace {

constexpr double kWidth = 800, kHeight = 480;
constexpr double kLeft = 80, kRight = 170, kTop = 40, kBottom = 60;  // plot margins (legend right)
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;
const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// A "nice" tick step (1, 2 or 5 x 10^k) giving about `want` ticks up to max.
double nice_step(double max, int want) {
  if (max <= 0) return 1;
  const double raw = max / want;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

std::string label_us(double us) {
  char buf[32];
  if (us >= 1e6) std::snprintf(buf, sizeof buf, "%g s", us / 1e6);
  else if (us >= 1000) std::snprintf(buf, sizeof buf, "%g ms", us / 1000);
  else std::snprintf(buf, sizeof buf, "%g us", us);
  return buf;
}

std::string header(const std::string& title) {
  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(kWidth) + "\" height=\"" + num(kHeight) +
       "\" viewBox=\"0 0 " + num(kWidth) + " " + num(kHeight) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += "<text x=\"" + num(kWidth / 2) + "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" + xml_escape(title) +
       "</text>\n";
  s += "<rect x=\"" + num(kLeft) + "\" y=\"" + num(kTop) + "\" width=\"" + num(kPlotW) + "\" height=\"" + num(kPlotH) +
       "\" fill=\"none\" stroke=\"#444\"/>\n";
  return s;
}

// Horizontal grid lines and labels for a linear latency axis 0..ymax_us; returns the top value.
std::string y_axis(double ymax_us, double& top) {
  const double step = nice_step(ymax_us, 6);
  top = std::max(step, std::ceil(ymax_us / step) * step);
  std::string s;
  for (double v = 0; v <= top + step / 2; v += step) {
    const double y = kTop + kPlotH - v / top * kPlotH;
    s += "<line x1=\"" + num(kLeft) + "\" y1=\"" + num(y) + "\" x2=\"" + num(kLeft + kPlotW) + "\" y2=\"" + num(y) +
         "\" stroke=\"#ddd\"/>\n";
    s += "<text x=\"" + num(kLeft - 6) + "\" y=\"" + num(y + 4) + "\" text-anchor=\"end\">" + label_us(v) + "</text>\n";
  }
  s += "<text transform=\"translate(18," + num(kTop + kPlotH / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">latency</text>\n";
  return s;
}

// Power-of-ten grid lines and labels for a log latency axis over [10^lo, 10^hi] microseconds.
std::string log_y_axis(int lo, int hi) {
  std::string s;
  for (int d = lo; d <= hi; ++d) {
    const double y = kTop + kPlotH - static_cast<double>(d - lo) / (hi - lo) * kPlotH;
    s += "<line x1=\"" + num(kLeft) + "\" y1=\"" + num(y) + "\" x2=\"" + num(kLeft + kPlotW) + "\" y2=\"" + num(y) +
         "\" stroke=\"#ddd\"/>\n";
    s += "<text x=\"" + num(kLeft - 6) + "\" y=\"" + num(y + 4) + "\" text-anchor=\"end\">" +
         label_us(std::pow(10.0, d)) + "</text>\n";
  }
  s += "<text transform=\"translate(18," + num(kTop + kPlotH / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">latency (log scale)</text>\n";
  return s;
}

// Legend row `row` (right of the plot): a line sample in run `color`'s colour and its label.
std::string legend_entry(size_t row, size_t color, const std::string& label, const char* dash) {
  const double y = kTop + 10 + static_cast<double>(row) * 18;
  const double x = kLeft + kPlotW + 12;
  return "<line x1=\"" + num(x) + "\" y1=\"" + num(y) + "\" x2=\"" + num(x + 24) + "\" y2=\"" + num(y) + "\" stroke=\"" +
         kColors[color % 8] + "\" stroke-width=\"2\"" + dash + "/>\n<text x=\"" + num(x + 30) + "\" y=\"" + num(y + 4) +
         "\">" + xml_escape(label) + "</text>\n";
}

}  // namespace

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t') out += c;
    }
  }
  return out;
}

std::string percentile_spectrum_svg(const std::string& title, const std::vector<spectrum_run>& runs, y_scale scale) {
  constexpr double kDecades = 6;  // 1/(1-p) up to 10^6: 99.9999%
  double ymax = 0, ymin = 0;
  bool any = false;
  for (const auto& r : runs) {
    if (r.hist->count() == 0) continue;
    ymax = std::max(ymax, static_cast<double>(r.hist->max()) / 1e3);
    ymin = any ? std::min(ymin, static_cast<double>(r.hist->min()) / 1e3) : static_cast<double>(r.hist->min()) / 1e3;
    any = true;
  }
  std::string s = header(title);
  double top = 1;
  // Log axis in whole decades of microseconds; values below 1 ns (0) sit on the bottom line.
  int lo = 0, hi = 1;
  if (scale == y_scale::log) {
    lo = static_cast<int>(std::floor(std::log10(std::max(ymin, 1e-3))));
    hi = std::max(lo + 1, static_cast<int>(std::ceil(std::log10(std::max(ymax, 1e-3)))));
    s += log_y_axis(lo, hi);
  } else {
    s += y_axis(ymax, top);
  }
  auto y_of = [&](double us) {
    if (scale == y_scale::linear) return kTop + kPlotH - us / top * kPlotH;
    const double frac = (std::log10(std::max(us, std::pow(10.0, lo))) - lo) / (hi - lo);
    return kTop + kPlotH - frac * kPlotH;
  };
  const char* labels[] = {"0%", "90%", "99%", "99.9%", "99.99%", "99.999%", "99.9999%"};
  for (int d = 0; d <= kDecades; ++d) {
    const double x = kLeft + d / kDecades * kPlotW;
    s += "<line x1=\"" + num(x) + "\" y1=\"" + num(kTop) + "\" x2=\"" + num(x) + "\" y2=\"" + num(kTop + kPlotH) +
         "\" stroke=\"#ddd\"/>\n";
    s += "<text x=\"" + num(x) + "\" y=\"" + num(kTop + kPlotH + 18) + "\" text-anchor=\"middle\">" + labels[d] +
         "</text>\n";
  }
  s += "<text x=\"" + num(kLeft + kPlotW / 2) + "\" y=\"" + num(kHeight - 14) +
       "\" text-anchor=\"middle\">percentile (log scale of 1/(1-p))</text>\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    const log_histogram& h = *runs[i].hist;
    if (h.count() == 0) continue;
    // Stop where one more sample's share would be finer than the data (p > 1 - 1/n).
    const double last = std::min(kDecades, std::log10(static_cast<double>(h.count())));
    std::string pts;
    for (int k = 0; k <= 300; ++k) {
      const double dec = last * k / 300.0;
      const double q = 1.0 - std::pow(10.0, -dec);
      const double x = kLeft + dec / kDecades * kPlotW;
      const double y = y_of(static_cast<double>(h.percentile(q)) / 1e3);
      pts += num(x) + "," + num(y) + " ";
    }
    s += "<polyline fill=\"none\" stroke=\"" + std::string(kColors[i % 8]) + "\" stroke-width=\"2\" points=\"" + pts +
         "\"/>\n";
    s += legend_entry(i, i, runs[i].label, "");
  }
  s += "</svg>\n";
  return s;
}

std::string latency_over_time_svg(const std::string& title, const std::vector<series_run>& runs) {
  double ymax = 0, tmax = 0;
  for (const auto& r : runs)
    for (const auto& p : *r.points) {
      ymax = std::max(ymax, static_cast<double>(p.max_ns) / 1e3);
      tmax = std::max(tmax, p.t_s);
    }
  std::string s = header(title);
  double top = 1;
  s += y_axis(ymax, top);
  const double tstep = nice_step(tmax, 8);
  const double tend = std::max(tstep, std::ceil(tmax / tstep) * tstep);
  for (double t = 0; t <= tend + tstep / 2; t += tstep) {
    const double x = kLeft + t / tend * kPlotW;
    s += "<line x1=\"" + num(x) + "\" y1=\"" + num(kTop) + "\" x2=\"" + num(x) + "\" y2=\"" + num(kTop + kPlotH) +
         "\" stroke=\"#ddd\"/>\n";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g s", t);
    s += "<text x=\"" + num(x) + "\" y=\"" + num(kTop + kPlotH + 18) + "\" text-anchor=\"middle\">" + buf + "</text>\n";
  }
  s += "<text x=\"" + num(kLeft + kPlotW / 2) + "\" y=\"" + num(kHeight - 14) +
       "\" text-anchor=\"middle\">time (s)</text>\n";
  size_t entry = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    struct line_kind {
      const char* name;
      const char* dash;
      int64_t series_point::*field;
    };
    const line_kind kinds[] = {{"p50", "", &series_point::p50_ns},
                               {"p99", " stroke-dasharray=\"6,3\"", &series_point::p99_ns},
                               {"max", " stroke-dasharray=\"2,3\"", &series_point::max_ns}};
    for (const auto& k : kinds) {
      std::string pts;
      for (const auto& p : *runs[i].points)
        pts += num(kLeft + p.t_s / tend * kPlotW) + "," +
               num(kTop + kPlotH - static_cast<double>(p.*(k.field)) / 1e3 / top * kPlotH) + " ";
      s += "<polyline fill=\"none\" stroke=\"" + std::string(kColors[i % 8]) + "\" stroke-width=\"2\"" + k.dash +
           " points=\"" + pts + "\"/>\n";
      s += legend_entry(entry++, i, runs[i].label + " " + k.name, k.dash);
    }
  }
  s += "</svg>\n";
  return s;
}

}  // namespace peregrine::bench
