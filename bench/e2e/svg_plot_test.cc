// SVG writer: documents are well-formed XML (checked by a small tag/attribute/entity parser
// below, no XML library needed), carry their axis labels and escape run labels.
#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

#include "bench/e2e/histogram.h"
#include "bench/e2e/recorder.h"
#include "bench/e2e/svg_plot.h"

namespace peregrine::bench {
namespace {

bool valid_entities(const std::string& text) {
  for (size_t i = text.find('&'); i != std::string::npos; i = text.find('&', i + 1)) {
    bool ok = false;
    for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"})
      if (text.compare(i, std::char_traits<char>::length(e), e) == 0) ok = true;
    if (!ok) return false;
  }
  return true;
}

// Returns an empty string when `doc` is well-formed XML (prolog, one root element, balanced
// tags, quoted attributes, valid entities), else what is wrong.
std::string xml_problem(const std::string& doc) {
  size_t pos = 0;
  if (doc.rfind("<?xml", 0) == 0) pos = doc.find("?>") + 2;
  std::vector<std::string> stack;
  bool had_root = false;
  while (pos < doc.size()) {
    const size_t lt = doc.find('<', pos);
    const std::string text = doc.substr(pos, lt == std::string::npos ? std::string::npos : lt - pos);
    if (text.find('>') != std::string::npos || !valid_entities(text)) return "bad text: " + text;
    if (stack.empty() && text.find_first_not_of(" \n\t") != std::string::npos) return "text outside root";
    if (lt == std::string::npos) break;
    const size_t gt = doc.find('>', lt);
    if (gt == std::string::npos) return "unterminated tag";
    std::string tag = doc.substr(lt + 1, gt - lt - 1);
    pos = gt + 1;
    if (tag.empty()) return "empty tag";
    if (tag[0] == '/') {
      if (stack.empty() || stack.back() != tag.substr(1)) return "mismatched </" + tag.substr(1) + ">";
      stack.pop_back();
      continue;
    }
    const bool self_closing = tag.back() == '/';
    if (self_closing) tag.pop_back();
    size_t i = 0;
    while (i < tag.size() && (std::isalnum(static_cast<unsigned char>(tag[i])) || tag[i] == '-' || tag[i] == ':')) ++i;
    const std::string name = tag.substr(0, i);
    if (name.empty()) return "tag without name: " + tag;
    // Attributes: name="value" separated by spaces.
    while (i < tag.size()) {
      while (i < tag.size() && tag[i] == ' ') ++i;
      if (i == tag.size()) break;
      const size_t eq = tag.find('=', i);
      if (eq == std::string::npos || eq + 1 >= tag.size() || tag[eq + 1] != '"') return "unquoted attribute in " + tag;
      const size_t close = tag.find('"', eq + 2);
      if (close == std::string::npos) return "unterminated attribute in " + tag;
      if (!valid_entities(tag.substr(eq + 2, close - eq - 2)) || tag.substr(eq + 2, close - eq - 2).find('<') != std::string::npos)
        return "bad attribute value in " + tag;
      i = close + 1;
    }
    if (stack.empty()) {
      if (had_root) return "second root element";
      had_root = true;
    }
    if (!self_closing) stack.push_back(name);
  }
  if (!stack.empty()) return "unclosed <" + stack.back() + ">";
  return had_root ? "" : "no root element";
}

TEST(svg_plot, checker_rejects_broken_xml) {
  EXPECT_EQ(xml_problem("<svg><g></g></svg>"), "");
  EXPECT_NE(xml_problem("<svg><g></svg>"), "");
  EXPECT_NE(xml_problem("<svg a=1/>"), "");
  EXPECT_NE(xml_problem("<svg>a & b</svg>"), "");
  EXPECT_NE(xml_problem("<svg/><svg/>"), "");
}

TEST(svg_plot, percentile_spectrum_is_well_formed_with_axis_labels) {
  log_histogram a, b;
  for (int i = 1; i <= 100000; ++i) {
    a.record(i * 10);
    b.record(i * 20 + (i % 1000 == 0 ? 200'000'000 : 0));
  }
  const std::string svg = percentile_spectrum_svg("rr <open> & more", {{"peregrine", &a}, {"nats \"2.9\"", &b}});
  EXPECT_EQ(xml_problem(svg), "") << svg.substr(0, 2000);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  for (const char* label : {">0%<", ">90%<", ">99%<", ">99.9%<", ">99.99%<", ">99.999%<", "percentile (log scale of 1/(1-p))",
                            ">latency (log scale)<", ">peregrine<", ">nats &quot;2.9&quot;<", "rr &lt;open&gt; &amp; more", " ms<"})
    EXPECT_NE(svg.find(label), std::string::npos) << label;
  // One curve per run.
  size_t curves = 0;
  for (size_t p = svg.find("<polyline"); p != std::string::npos; p = svg.find("<polyline", p + 1)) ++curves;
  EXPECT_EQ(curves, 2u);
}

// Every y label of a document, top to bottom (the text-anchor="end" labels left of the plot).
std::vector<std::string> y_labels(const std::string& svg) {
  std::vector<std::string> out;
  const std::string key = "text-anchor=\"end\">";
  for (size_t p = svg.find(key); p != std::string::npos; p = svg.find(key, p + 1)) {
    const size_t b = p + key.size();
    out.push_back(svg.substr(b, svg.find('<', b) - b));
  }
  return {out.rbegin(), out.rend()};
}

TEST(svg_plot, spectrum_y_axis_is_log_by_default_linear_on_request) {
  // 10 us .. 50 ms: three and a half decades.
  log_histogram h;
  for (int i = 0; i < 10000; ++i) h.record(10'000 + i);
  h.record(50'000'000);
  const std::string log_svg = percentile_spectrum_svg("t", {{"run", &h}});
  EXPECT_EQ(xml_problem(log_svg), "");
  // Decades from the one holding the minimum up to the one above the maximum.
  EXPECT_EQ(y_labels(log_svg), (std::vector<std::string>{"100 ms", "10 ms", "1 ms", "100 us", "10 us"}));
  EXPECT_NE(log_svg.find(">latency (log scale)<"), std::string::npos);
  // The median sits in the bottom half on the log axis (near 10 us), in the bottom 1% on the linear one.
  const std::string lin_svg = percentile_spectrum_svg("t", {{"run", &h}}, y_scale::linear);
  EXPECT_EQ(xml_problem(lin_svg), "");
  EXPECT_EQ(lin_svg.find("log scale)"), std::string::npos);
  const auto lin = y_labels(lin_svg);
  ASSERT_GE(lin.size(), 2u);
  EXPECT_EQ(lin.back(), "0 us");
  EXPECT_EQ(lin.front(), "50 ms");
  EXPECT_NE(lin_svg.find(">latency<"), std::string::npos);
}

TEST(svg_plot, spectrum_log_axis_survives_zero_and_one_decade_data) {
  log_histogram zero, narrow;
  zero.record(0);
  narrow.record(2000);
  narrow.record(3000);
  for (const log_histogram* h : {&zero, &narrow}) {
    const std::string svg = percentile_spectrum_svg("t", {{"r", h}});
    EXPECT_EQ(xml_problem(svg), "");
    EXPECT_GE(y_labels(svg).size(), 2u);
    EXPECT_EQ(svg.find("nan"), std::string::npos);
    EXPECT_EQ(svg.find("inf"), std::string::npos);
  }
  EXPECT_EQ(y_labels(percentile_spectrum_svg("t", {{"r", &narrow}})), (std::vector<std::string>{"10 us", "1 us"}));
}

TEST(svg_plot, latency_over_time_is_well_formed_with_axis_labels) {
  std::vector<series_point> pts;
  for (int i = 1; i <= 10; ++i) pts.push_back({static_cast<double>(i), 1000, 1000.0, 50'000, 90'000 + i, i == 5 ? 200'000'000 : 120'000});
  const std::string svg = latency_over_time_svg("latency over time", {{"rr", &pts}});
  EXPECT_EQ(xml_problem(svg), "");
  for (const char* label : {"time (s)", ">latency<", ">rr p50<", ">rr p99<", ">rr max<", ">10 s<", ">0 s<"})
    EXPECT_NE(svg.find(label), std::string::npos) << label;
  // Empty input still gives a valid document.
  std::vector<series_point> none;
  EXPECT_EQ(xml_problem(latency_over_time_svg("empty", {{"x", &none}})), "");
  EXPECT_EQ(xml_problem(percentile_spectrum_svg("empty", {})), "");
}

}  // namespace
}  // namespace peregrine::bench
