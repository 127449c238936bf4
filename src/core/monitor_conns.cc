// /connz and /subsz: the connection and subscription lists, with nats-server's options
// (offset, limit, sort, state, cid, acc, subs, test), field names and order.
#include <algorithm>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "src/base/clock.h"
#include "src/base/go_text.h"
#include "src/core/monitor.h"
#include "src/core/monitor_format.h"
#include "src/core/monitor_query.h"
#include "src/core/monitor_types.h"
#include "src/core/server.h"
#include "src/core/subject.h"

namespace core {
namespace {

using ojson = nlohmann::ordered_json;

std::int64_t wall_now() { return base::system_clock::instance().wall_ns(); }

ojson sub_json(const sub_snapshot& s, bool with_account) {
  ojson j;
  if (with_account) j["account"] = s.account;
  j["subject"] = s.subject;
  if (!s.queue.empty()) j["qgroup"] = s.queue;
  j["sid"] = s.sid;
  j["msgs"] = s.msgs;
  j["cid"] = s.cid;
  return j;
}

}  // namespace

http_reply monitor_connz(server& srv, const http_query& q) {
  http_reply err;
  std::int64_t offset = 0, limit = 1024;
  if (!int_arg(q, "offset", offset, err) || !int_arg(q, "limit", limit, err)) return err;
  if (!bool_args_ok(q, {"subs"}, err, "detail") || !bool_args_ok(q, {"auth"}, err)) return err;
  if (offset < 0) offset = 0;
  if (limit <= 0) limit = 1024;
  std::string state = "open";
  if (auto it = q.find("state"); it != q.end() && !it->second.empty()) {
    state = it->second;
    for (auto& ch : state) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    if (state != "open" && state != "closed" && state != "any" && state != "all")
      return bad_request("Error decoding state for " + it->second);
  }
  std::optional<std::uint64_t> cid;
  if (auto it = q.find("cid"); it != q.end() && !it->second.empty()) {
    try {
      std::size_t used = 0;
      if (it->second[0] == '-') throw 0;
      cid = std::stoull(it->second, &used);
      if (used != it->second.size()) throw 0;
    } catch (...) {
      return bad_request(fmt::format(
          "Error decoding uint64 for 'cid': strconv.ParseUint: parsing \"{}\": invalid syntax", it->second));
    }
  }
  std::string sort = "cid";
  if (auto it = q.find("sort"); it != q.end() && !it->second.empty()) sort = it->second;
  static const char* kSorts[] = {"cid",      "start",    "subs",  "pending", "msgs_to", "msgs_from", "bytes_to",
                                 "bytes_from", "last",   "idle",  "uptime",  "stop",    "reason",    "rtt"};
  if (std::none_of(std::begin(kSorts), std::end(kSorts), [&](const char* s) { return sort == s; }))
    return bad_request("invalid sorting option: " + sort);
  if ((sort == "stop" || sort == "reason") && state != "closed")
    return bad_request("sort by " + sort + " only valid on closed connections");
  const std::string subs_arg = q.count("subs") ? q.at("subs") : "";
  const bool detail = subs_arg == "detail";
  const bool with_subs = detail || truthy(q, "subs");
  const bool with_auth = truthy(q, "auth");

  snapshot_request req;
  req.conns = state != "closed";
  req.closed = state != "open";
  req.conn_subs = with_subs;
  std::vector<conn_snapshot> conns;
  for (auto& s : collect_snapshots(srv, req)) {
    for (auto& c : s.open) conns.push_back(std::move(c));
    for (auto& c : s.closed) conns.push_back(std::move(c));
  }
  if (cid) std::erase_if(conns, [&](const conn_snapshot& c) { return c.cid != *cid; });
  if (auto it = q.find("acc"); it != q.end() && !it->second.empty())  // one account's (nats-server's acc=)
    std::erase_if(conns, [&](const conn_snapshot& c) { return (c.account.empty() ? "$G" : c.account) != it->second; });
  const std::int64_t now = wall_now();
  auto key = [&](const conn_snapshot& c) -> std::int64_t {
    if (sort == "rtt") return c.rtt_ns;
    if (sort == "subs") return std::int64_t(c.subscriptions);
    if (sort == "pending") return std::int64_t(c.pending_bytes);
    if (sort == "msgs_to") return std::int64_t(c.out_msgs);
    if (sort == "msgs_from") return std::int64_t(c.in_msgs);
    if (sort == "bytes_to") return std::int64_t(c.out_bytes);
    if (sort == "bytes_from") return std::int64_t(c.in_bytes);
    if (sort == "last") return c.last_ns;
    if (sort == "idle") return now - c.last_ns;
    if (sort == "uptime") return (c.stop_ns ? c.stop_ns : now) - c.start_ns;
    if (sort == "stop") return c.stop_ns;
    return 0;
  };
  if (sort == "cid") {
    std::sort(conns.begin(), conns.end(), [](const auto& a, const auto& b) { return a.cid < b.cid; });
  } else if (sort == "start") {
    std::sort(conns.begin(), conns.end(), [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
  } else if (sort == "reason") {
    std::stable_sort(conns.begin(), conns.end(), [](const auto& a, const auto& b) { return a.reason < b.reason; });
  } else {  // descending, as nats-server sorts these
    std::stable_sort(conns.begin(), conns.end(), [&](const auto& a, const auto& b) { return key(a) > key(b); });
  }
  const std::size_t total = conns.size();
  ojson list = ojson::array();
  for (std::size_t i = std::size_t(offset); i < total && list.size() < std::size_t(limit); ++i) {
    const conn_snapshot& c = conns[i];
    ojson e;
    e["cid"] = c.cid;
    e["kind"] = "Client";
    e["type"] = "nats";
    e["ip"] = c.ip;
    e["port"] = c.port;
    e["start"] = base::rfc3339_nano(c.start_ns);
    e["last_activity"] = base::rfc3339_nano(c.last_ns);
    if (c.stop_ns) {
      e["stop"] = base::rfc3339_nano(c.stop_ns);
      e["reason"] = c.reason;
    }
    if (c.rtt_ns > 0) e["rtt"] = rtt_text(c.rtt_ns);
    e["uptime"] = uptime_text((c.stop_ns ? c.stop_ns : now) - c.start_ns);
    e["idle"] = uptime_text((c.stop_ns ? c.stop_ns : now) - c.last_ns);
    e["pending_bytes"] = c.pending_bytes;
    e["in_msgs"] = c.in_msgs;
    e["out_msgs"] = c.out_msgs;
    e["in_bytes"] = c.in_bytes;
    e["out_bytes"] = c.out_bytes;
    e["subscriptions"] = c.subscriptions;
    if (!c.name.empty()) e["name"] = c.name;
    if (!c.lang.empty()) e["lang"] = c.lang;
    if (!c.version.empty()) e["version"] = c.version;
    if (!c.tls_version.empty()) e["tls_version"] = c.tls_version;
    if (!c.tls_cipher.empty()) e["tls_cipher_suite"] = c.tls_cipher;
    if (with_auth && !c.user.empty()) e["authorized_user"] = c.user;
    if (with_auth && !c.account.empty()) e["account"] = c.account;
    if (with_subs && !c.subs.empty()) {
      ojson sl = ojson::array();
      for (const auto& s : c.subs) {
        if (detail) {
          sl.push_back(sub_json(s, false));
        } else {
          sl.push_back(s.subject);
        }
      }
      e[detail ? "subscriptions_list_detail" : "subscriptions_list"] = sl;
    }
    list.push_back(e);
  }
  ojson j;
  j["server_id"] = srv.shared().server_id;
  j["now"] = base::rfc3339_nano(now);
  j["num_connections"] = list.size();
  j["total"] = total;
  j["offset"] = offset;
  j["limit"] = limit;
  j["connections"] = list;
  return json_reply(j);
}

http_reply monitor_subsz(server& srv, const http_query& q) {
  http_reply err;
  std::int64_t offset = 0, limit = 1024;
  if (!int_arg(q, "offset", offset, err) || !int_arg(q, "limit", limit, err)) return err;
  if (!bool_args_ok(q, {"subs"}, err)) return err;
  if (offset < 0) offset = 0;
  if (limit <= 0) limit = 1024;
  const bool with_subs = truthy(q, "subs");
  std::string test;
  if (auto it = q.find("test"); it != q.end() && !it->second.empty()) {
    test = it->second;
    if (!valid_literal_subject(test))
      return bad_request("invalid test subject, must be valid publish subject: " + test);
  }
  const std::string acc = q.count("acc") ? q.at("acc") : "";
  snapshot_request req;
  req.all_subs = with_subs || !test.empty() || !acc.empty();
  std::uint64_t count = 0;
  std::vector<sub_snapshot> subs;
  sublist_stats st;
  for (auto& s : collect_snapshots(srv, req)) {
    count += s.subscriptions;
    for (auto& sub : s.subs) subs.push_back(std::move(sub));
    st.cache += s.sublist.cache;
    st.inserts += s.sublist.inserts;
    st.removes += s.sublist.removes;
    st.matches += s.sublist.matches;
    st.fanout_sum += s.sublist.fanout_sum;
    st.max_fanout = std::max(st.max_fanout, s.sublist.max_fanout);
  }
  if (!acc.empty()) {  // one account's subscriptions (nats-server's acc=)
    std::erase_if(subs, [&](const sub_snapshot& s) { return s.account != acc; });
    count = subs.size();
  }
  if (!test.empty()) std::erase_if(subs, [&](const sub_snapshot& s) { return !subject_matches(s.subject, test); });
  ojson j;
  if (with_subs) {
    j["server_id"] = srv.shared().server_id;
    j["now"] = base::rfc3339_nano(wall_now());
  }
  j["num_subscriptions"] = count;
  j["num_cache"] = st.cache;
  j["num_inserts"] = st.inserts;
  j["num_removes"] = st.removes;
  j["num_matches"] = st.matches;
  j["cache_hit_rate"] = 0;  // the sublist's cache keeps no hit counter
  j["max_fanout"] = st.max_fanout;
  j["avg_fanout"] = st.matches ? double(st.fanout_sum) / double(st.matches) : 0.0;
  if (with_subs) {
    j["total"] = subs.size();
    j["offset"] = offset;
    j["limit"] = limit;
    ojson list = ojson::array();
    for (std::size_t i = std::size_t(offset); i < subs.size() && list.size() < std::size_t(limit); ++i)
      list.push_back(sub_json(subs[i], true));
    j["subscriptions_list"] = list;
  }
  return json_reply(j);
}

}  // namespace core
