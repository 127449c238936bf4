// natscli-style renderings of the server's stream and consumer INFO JSON.
#include <algorithm>

#include "src/cli/cli_format.h"

namespace peregrine::cli {
namespace {

int64_t num(const ordered_json& j, const char* key, int64_t dflt = 0) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<int64_t>() : dflt;
}
bool flag(const ordered_json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}
std::string str(const ordered_json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}
std::string yes_no(bool b) { return b ? "true" : "false"; }
std::string title_case(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}
std::string limit_count(int64_t v) { return v <= 0 ? "unlimited" : comma(v); }
std::string limit_bytes(int64_t v) { return v <= 0 ? "unlimited" : ibytes(static_cast<uint64_t>(v)); }

// "time" fields: a valid time (not Go's zero 0001-01-01) as "2026-05-22 10:14:22".
std::optional<int64_t> time_of(const ordered_json& j, const char* key) {
  const std::string s = str(j, key);
  if (s.empty() || s.rfind("0001-", 0) == 0) return std::nullopt;
  return parse_rfc3339(s);
}

std::string retention_text(const std::string& r) {
  if (r == "workqueue") return "WorkQueue";
  return title_case(r);
}

void source_block(std::vector<info_line>& out, const ordered_json& si) {
  out.push_back({"Stream Name", str(si, "name")});
  if (si.contains("filter_subject") && !str(si, "filter_subject").empty())
    out.push_back({"Filter Subject", str(si, "filter_subject")});
  out.push_back({"Lag", comma(num(si, "lag"))});
  const int64_t active = num(si, "active", -1);
  out.push_back({"Last Seen", active < 0 ? "never" : human_duration(active)});
  if (si.contains("error") && si["error"].is_object())
    out.push_back({"Error", str(si["error"], "description")});
}

}  // namespace

std::string stream_info_text(const ordered_json& info) {
  const ordered_json& c = info.value("config", ordered_json::object());
  const ordered_json& st = info.value("state", ordered_json::object());
  std::string head = "Information for Stream " + str(c, "name");
  if (auto t = time_of(info, "created")) head += " created " + short_time(*t);
  std::vector<info_line> l;
  if (!str(c, "description").empty()) l.push_back({"Description", str(c, "description")});
  if (c.contains("subjects") && c["subjects"].is_array() && !c["subjects"].empty()) {
    std::string subs;
    for (const auto& s : c["subjects"]) subs += (subs.empty() ? "" : ", ") + s.get<std::string>();
    l.push_back({"Subjects", subs});
  }
  l.push_back({"Replicas", std::to_string(num(c, "num_replicas", 1))});
  l.push_back({"Storage", title_case(str(c, "storage"))});
  if (flag(c, "sealed")) l.push_back({"Sealed", "true"});
  if (c.contains("subject_transform") && c["subject_transform"].is_object())
    l.push_back({"Subject Transform", str(c["subject_transform"], "src") + " to " + str(c["subject_transform"], "dest")});
  if (c.contains("republish") && c["republish"].is_object()) {
    const auto& r = c["republish"];
    l.push_back({"Republishing", str(r, "src") + " to " + str(r, "dest") + (flag(r, "headers_only") ? " (headers only)" : "")});
  }

  l.push_back({"", "Options:"});
  l.push_back({"Retention", retention_text(str(c, "retention"))});
  l.push_back({"Acknowledgments", yes_no(!flag(c, "no_ack"))});
  l.push_back({"Discard Policy", title_case(str(c, "discard"))});
  l.push_back({"Duplicate Window", human_duration(num(c, "duplicate_window"))});
  l.push_back({"Direct Get", yes_no(flag(c, "allow_direct"))});
  if (flag(c, "mirror_direct")) l.push_back({"Mirror Direct Get", "true"});
  l.push_back({"Allows Msg Delete", yes_no(!flag(c, "deny_delete"))});
  l.push_back({"Allows Purge", yes_no(!flag(c, "deny_purge"))});
  l.push_back({"Allows Rollups", yes_no(flag(c, "allow_rollup_hdrs"))});
  if (c.contains("allow_msg_ttl")) l.push_back({"Allows Per-Message TTL", yes_no(flag(c, "allow_msg_ttl"))});
  if (c.contains("allow_atomic")) l.push_back({"Allows Atomic Batch", yes_no(flag(c, "allow_atomic"))});
  if (c.contains("allow_batched")) l.push_back({"Allows Batch Publish", yes_no(flag(c, "allow_batched"))});

  l.push_back({"", "Limits:"});
  l.push_back({"Maximum Messages", limit_count(num(c, "max_msgs", -1))});
  l.push_back({"Maximum Per Subject", limit_count(num(c, "max_msgs_per_subject", -1))});
  l.push_back({"Maximum Bytes", limit_bytes(num(c, "max_bytes", -1))});
  const int64_t age = num(c, "max_age");
  l.push_back({"Maximum Age", age <= 0 ? "unlimited" : human_duration(age)});
  l.push_back({"Maximum Message Size", limit_bytes(num(c, "max_msg_size", -1))});
  l.push_back({"Maximum Consumers", limit_count(num(c, "max_consumers", -1))});

  if (info.contains("cluster") && info["cluster"].is_object() && !str(info["cluster"], "name").empty()) {
    const auto& cl = info["cluster"];
    l.push_back({"", "Cluster Information:"});
    l.push_back({"Name", str(cl, "name")});
    l.push_back({"Leader", str(cl, "leader")});
    if (cl.contains("replicas") && cl["replicas"].is_array())
      for (const auto& r : cl["replicas"])
        l.push_back({"Replica", str(r, "name") + (flag(r, "current") ? ", current" : ", outdated")});
  }
  if (info.contains("mirror") && info["mirror"].is_object()) {
    l.push_back({"", "Mirror Information:"});
    source_block(l, info["mirror"]);
  }
  if (info.contains("sources") && info["sources"].is_array() && !info["sources"].empty()) {
    l.push_back({"", "Source Information:"});
    bool first = true;
    for (const auto& s : info["sources"]) {
      if (!first) l.push_back({"", ""});
      first = false;
      source_block(l, s);
    }
  }

  l.push_back({"", "State:"});
  l.push_back({"Messages", comma(num(st, "messages"))});
  l.push_back({"Bytes", ibytes(static_cast<uint64_t>(num(st, "bytes")))});
  const int64_t msgs = num(st, "messages");
  auto seq_line = [&](const char* seq_key, const char* ts_key) {
    std::string v = comma(num(st, seq_key));
    if (msgs > 0)
      if (auto t = time_of(st, ts_key)) v += " @ " + short_time(*t);
    return v;
  };
  l.push_back({"First Sequence", seq_line("first_seq", "first_ts")});
  l.push_back({"Last Sequence", seq_line("last_seq", "last_ts")});
  if (num(st, "num_deleted") > 0) l.push_back({"Deleted Messages", comma(num(st, "num_deleted"))});
  l.push_back({"Active Consumers", comma(num(st, "consumer_count"))});
  if (num(st, "num_subjects") > 0) l.push_back({"Number of Subjects", comma(num(st, "num_subjects"))});
  std::string body = render_lines(l);
  // Blank lines separating source blocks come out as a doubled empty title; keep one.
  for (size_t p; (p = body.find("\n\n\n\n")) != std::string::npos;) body.erase(p, 2);
  return head + "\n\n" + body;
}

namespace {

std::string deliver_text(const ordered_json& c) {
  const std::string p = str(c, "deliver_policy");
  if (p == "by_start_sequence") return "From Sequence " + std::to_string(num(c, "opt_start_seq"));
  if (p == "by_start_time") {
    auto t = time_of(c, "opt_start_time");
    return "Since " + (t ? short_time(*t) : str(c, "opt_start_time"));
  }
  if (p == "last_per_subject") return "Last Per Subject";
  return title_case(p);
}
std::string priority_text(const std::string& p) {
  if (p == "pinned_client") return "Pinned Client";
  return title_case(p);
}
std::string seq_pair(const ordered_json& j) {
  return "Consumer sequence: " + comma(num(j, "consumer_seq")) + " Stream sequence: " + comma(num(j, "stream_seq"));
}

}  // namespace

std::string consumer_info_text(const ordered_json& info, int64_t now) {
  const ordered_json& c = info.value("config", ordered_json::object());
  std::string head = "Information for Consumer " + str(info, "stream_name") + " > " + str(info, "name");
  if (auto t = time_of(info, "created")) head += " created " + short_time(*t);
  std::vector<info_line> l;
  l.push_back({"", "Configuration:"});
  l.push_back({"Name", str(info, "name")});
  if (!str(c, "description").empty()) l.push_back({"Description", str(c, "description")});
  const bool pull = str(c, "deliver_subject").empty();
  if (pull) l.push_back({"Pull Mode", "true"});
  else l.push_back({"Delivery Subject", str(c, "deliver_subject")});
  if (!str(c, "filter_subject").empty()) l.push_back({"Filter Subject", str(c, "filter_subject")});
  if (c.contains("filter_subjects") && c["filter_subjects"].is_array())
    for (const auto& f : c["filter_subjects"]) l.push_back({"Filter Subject", f.get<std::string>()});
  l.push_back({"Deliver Policy", deliver_text(c)});
  if (!str(c, "deliver_group").empty()) l.push_back({"Deliver Queue Group", str(c, "deliver_group")});
  l.push_back({"Ack Policy", title_case(str(c, "ack_policy"))});
  if (str(c, "ack_policy") != "none") l.push_back({"Ack Wait", human_duration(num(c, "ack_wait"))});
  l.push_back({"Replay Policy", title_case(str(c, "replay_policy"))});
  if (num(c, "max_deliver", -1) > 0) l.push_back({"Maximum Deliveries", comma(num(c, "max_deliver"))});
  if (c.contains("backoff") && c["backoff"].is_array() && !c["backoff"].empty()) {
    std::string b;
    for (const auto& v : c["backoff"]) b += (b.empty() ? "" : ", ") + human_duration(v.get<int64_t>());
    l.push_back({"Backoff", b});
  }
  if (num(c, "inactive_threshold") > 0) l.push_back({"Inactive Threshold", human_duration(num(c, "inactive_threshold"))});
  if (num(c, "max_ack_pending") > 0) l.push_back({"Max Ack Pending", comma(num(c, "max_ack_pending"))});
  if (pull && num(c, "max_waiting") > 0) l.push_back({"Max Waiting Pulls", comma(num(c, "max_waiting"))});
  if (num(c, "max_batch") > 0) l.push_back({"Max Pull Batch", comma(num(c, "max_batch"))});
  if (num(c, "idle_heartbeat") > 0) l.push_back({"Idle Heartbeat", human_duration(num(c, "idle_heartbeat"))});
  if (flag(c, "flow_control")) l.push_back({"Flow Control", "true"});
  if (flag(c, "headers_only")) l.push_back({"Headers Only", "true"});
  if (!str(c, "priority_policy").empty() && str(c, "priority_policy") != "none") {
    l.push_back({"Priority Policy", priority_text(str(c, "priority_policy"))});
    std::string g;
    if (c.contains("priority_groups") && c["priority_groups"].is_array())
      for (const auto& v : c["priority_groups"]) g += (g.empty() ? "" : ", ") + v.get<std::string>();
    l.push_back({"Priority Groups", g});
    if (num(c, "priority_timeout") > 0) l.push_back({"Pinned TTL", human_duration(num(c, "priority_timeout"))});
  }
  if (flag(info, "paused"))
    if (auto t = time_of(c, "pause_until"))
      l.push_back({"Paused Until", short_time(*t) + " (" + human_duration(num(info, "pause_remaining")) + " remaining)"});

  l.push_back({"", "State:"});
  const ordered_json& d = info.value("delivered", ordered_json::object());
  std::string delivered = seq_pair(d);
  if (auto t = time_of(d, "last_active")) delivered += " Last delivery: " + human_duration(now - *t) + " ago";
  l.push_back({"Last Delivered Message", delivered});
  const ordered_json& a = info.value("ack_floor", ordered_json::object());
  std::string floor = seq_pair(a);
  if (auto t = time_of(a, "last_active")) floor += " Last Ack: " + human_duration(now - *t) + " ago";
  l.push_back({"Acknowledgment Floor", floor});
  std::string outstanding = comma(num(info, "num_ack_pending"));
  if (num(c, "max_ack_pending") > 0) outstanding += " out of maximum " + comma(num(c, "max_ack_pending"));
  l.push_back({"Outstanding Acks", outstanding});
  l.push_back({"Redelivered Messages", comma(num(info, "num_redelivered"))});
  l.push_back({"Unprocessed Messages", comma(num(info, "num_pending"))});
  if (pull) l.push_back({"Waiting Pulls", comma(num(info, "num_waiting")) + " of maximum " + comma(num(c, "max_waiting"))});
  if (info.contains("priority_groups") && info["priority_groups"].is_array())
    for (const auto& g : info["priority_groups"])
      if (!str(g, "pinned_client_id").empty())
        l.push_back({"Pinned Client", str(g, "group") + ": " + str(g, "pinned_client_id")});
  return head + "\n" + render_lines(l);
}

std::string config_diff(const ordered_json& before, const ordered_json& after) {
  std::string out;
  for (auto it = before.begin(); it != before.end(); ++it) {
    auto now = after.find(it.key());
    if (now == after.end()) out += "-   \"" + it.key() + "\": " + it.value().dump() + "\n";
    else if (*now != it.value())
      out += "-   \"" + it.key() + "\": " + it.value().dump() + "\n+   \"" + it.key() + "\": " + now->dump() + "\n";
  }
  for (auto it = after.begin(); it != after.end(); ++it)
    if (!before.contains(it.key())) out += "+   \"" + it.key() + "\": " + it.value().dump() + "\n";
  return out.empty() ? out : "Differences (-old +new):\n" + out;
}

std::string box_table(const std::string& title, const std::vector<std::string>& header,
                      const std::vector<std::vector<std::string>>& rows) {
  // Widths in characters (UTF-8 continuation bytes do not count).
  auto width = [](const std::string& s) {
    return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char ch) { return (ch & 0xC0) != 0x80; }));
  };
  std::vector<size_t> w(header.size());
  for (size_t i = 0; i < header.size(); ++i) w[i] = width(header[i]);
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], width(r[i]));
  size_t inner = header.size() * 3 - 1;
  for (size_t x : w) inner += x;
  auto rep = [](const std::string& s, size_t n) {
    std::string o;
    for (size_t i = 0; i < n; ++i) o += s;
    return o;
  };
  auto border = [&](const char* l, const char* mid, const char* r) {
    std::string o = l;
    for (size_t i = 0; i < w.size(); ++i) o += rep("─", w[i] + 2) + (i + 1 < w.size() ? mid : r);
    return o + "\n";
  };
  auto row = [&](const std::vector<std::string>& cells) {
    std::string o = "│";
    for (size_t i = 0; i < w.size(); ++i) {
      const std::string cell = i < cells.size() ? cells[i] : "";
      o += " " + cell + std::string(w[i] - width(cell), ' ') + " │";
    }
    return o + "\n";
  };
  if (width(title) + 2 > inner && !w.empty()) {  // a wide title widens the last column
    w.back() += width(title) + 2 - inner;
    inner = width(title) + 2;
  }
  std::string out = "╭" + rep("─", inner) + "╮\n";
  const size_t pad = inner - width(title);
  out += "│" + std::string(pad / 2, ' ') + title + std::string(pad - pad / 2, ' ') + "│\n";
  out += border("├", "┬", "┤") + row(header) + border("├", "┼", "┤");
  for (const auto& r : rows) out += row(r);
  out += border("╰", "┴", "╯");
  return out;
}

}  // namespace peregrine::cli
