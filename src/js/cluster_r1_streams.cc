// Every server's R1 streams known cluster-wide (cluster_streams.h, hub_view). An R1 stream
// stays on the server that created it, in its hub, but nats-server serves every stream from
// every server of a cluster, so each server reports the names and subjects of its R1 streams
// to the meta log (one r1_streams entry replacing its last one, sent when the set changed,
// and compared again while the log may differ). An API request about another server's R1
// stream is sent there as $PG.JSC.<server>.<hops>.<subject after $JS.API.>, republished
// there on $JS.API for the hub's handlers (and a consumer thread's pull subscriptions), whose
// reply goes straight back to the client. The streams' subjects and their consumers' ack
// subjects are announced to the routes, so publishes and acks from any server reach them.
#include <algorithm>

#include "src/base/log.h"
#include "src/core/subject_overlap.h"
#include "src/js/big_request.h"
#include "src/js/cluster_constants.h"
#include "src/js/cluster_streams.h"
#include "src/js/cluster_consumers.h"
#include "src/js/cluster_event_router.h"

namespace js {

namespace re = repl_entries;
using cluster::kMaxHops;
using cluster::prefix_of;
using cluster::r1_key;
using cluster::r1_name_in;
using cluster::kMetaGroup;

namespace {

// A report lost on its way (a meta leader that changed) is sent again after this.
constexpr std::int64_t kReportWaitNs = 2'000'000'000;
// The set is compared with the log's this often even when the hub said nothing changed (a
// new meta leader, a report that was refused).
constexpr std::int64_t kCheckEveryNs = 1'000'000'000;

// The stream a request names: api_stream_of's forms and DIRECT.GET.<stream>[.<subject>].
// STREAM.SNAPSHOT and STREAM.RESTORE stay with the server asked: their chunks flow over
// subjects only it subscribes.
std::string_view named_stream(std::string_view rest) {
  if (rest.starts_with("DIRECT.GET.")) {
    rest.remove_prefix(11);
    return rest.substr(0, rest.find('.'));
  }
  if (rest.starts_with("STREAM.SNAPSHOT.") || rest.starts_with("STREAM.RESTORE.")) return {};
  return api_stream_of(rest);
}


}  // namespace

bool cluster_streams::overlaps_cluster_streams(const stream_config& cfg, bool with_hub) const {
  const std::vector<std::string_view> mine(cfg.subjects.begin(), cfg.subjects.end());
  auto overlaps = [&](const std::string& name, const std::vector<std::string>& subjects) {
    if (name == cfg.name || subjects.empty()) return false;
    return core::sets_overlap(mine, std::vector<std::string_view>(subjects.begin(), subjects.end()));
  };
  for (const auto& [k, s] : _meta.streams()) {
    if (k.first != _account) continue;  // accounts' subjects do not meet
    stream_config other;
    if (!parse_stream_config(s.assignment.config_json, other) && overlaps(k.second, other.subjects)) return true;
  }
  for (const auto& [key, home] : _meta.r1_streams()) {  // this server's own: its hub's registry
    const std::string_view name = r1_name_in(_account, key);
    if (!name.empty() && home.server != _self && overlaps(std::string(name), home.subjects)) return true;
  }
  if (with_hub && _hub.list)
    for (const auto& st : _hub.list())
      if (overlaps(st.name, st.subjects)) return true;
  return false;
}

void cluster_streams::set_hub_view(hub_view v) {
  _hub = std::move(v);
  _consumers->set_account_limits(_hub.max_ack_pending, _hub.max_consumers);
  _r1_dirty = true;
}

std::string cluster_streams::r1_home(std::string_view name) const {
  const auto& r1 = _meta.r1_streams();
  auto it = r1.find(r1_key(_account, name));
  if (it == r1.end() || it->second.server == _self || is_replicated(name)) return {};
  if (_hub.holds && _hub.holds(name)) return {};  // a create that raced: this server's own
  return it->second.server;
}

bool cluster_streams::forward_r1(std::string_view rest, const core::inbound_msg& m, int hops) {
  const std::string_view name = named_stream(rest);
  if (name.empty() || hops >= kMaxHops) return false;
  const std::string home = r1_home(name);
  if (home.empty()) return false;
  // Its server is down: the info requests are answered as nats-server's meta leader answers
  // them (10118 / 10119) rather than left to time out.
  const bool info = rest.starts_with("STREAM.INFO."), consumer_info = rest.starts_with("CONSUMER.INFO.");
  if (info || consumer_info) {
    const auto meta = _repl.meta();
    if (std::find(meta.unreachable.begin(), meta.unreachable.end(), home) != meta.unreachable.end()) {
      if (info) respond_error(m.reply, "stream_info_response", make_error(err::stream_offline));
      else respond_error(m.reply, "consumer_info_response", make_error(err::consumer_offline));
      return true;
    }
  }
  forward(home, rest, m, hops);
  return true;
}

bool cluster_streams::serve_r1_here(std::string_view rest, const core::inbound_msg& m) {
  const std::string_view name = named_stream(rest);
  if (name.empty() || !_hub.holds) return false;
  // A create sent here (the name was this server's) makes the stream again if it is gone.
  if (!_hub.holds(name) && !rest.starts_with("STREAM.CREATE.")) return false;
  const std::string subject = "$JS.API." + std::string(rest);
  _host.publish(subject, m.reply, m.headers, m.payload);
  return true;
}

// The primary account's instance reports for every account's hub on this server (one report
// per server replaces the last); the others' changes mark it dirty through the router.
void cluster_streams::sync_r1(std::int64_t now_ns) {
  if (!_primary) return;
  for (cluster_streams* m : _router->members())
    if (m != this && m->_r1_dirty) {
      m->_r1_dirty = false;
      _r1_dirty = true;
    }
  if (_host.options().server_tags != _r1_reported_tags) _r1_dirty = true;  // a reload changed them
  // Compared when the hub's table changed or this server's report applied (dirty), when a
  // report is overdue, and each second while the log may differ (after any server's report,
  // or with no meta leader); once they match, nothing is copied until one of those happens.
  const bool overdue = _r1_report_until_ns != 0 && now_ns >= _r1_report_until_ns;
  if (!_r1_dirty && !overdue && (_r1_synced || now_ns < _r1_next_check_ns)) return;
  _r1_dirty = false;
  _r1_next_check_ns = now_ns + kCheckEveryNs;
  if (_r1_report_until_ns > now_ns) return;  // applying it makes this look again
  _r1_report_until_ns = 0;
  _r1_synced = false;
  std::string leader;
  const bool leading = meta_leader(leader);
  if (!leading && leader.empty()) return;
  if (_meta.removed().count(_self)) {  // out of the cluster for good
    _r1_synced = true;
    return;
  }
  // A name the log gives another server stays that server's (a create that raced on two
  // servers): reporting it would take it back and forth.
  re::r1_streams report{_self, {}, _host.options().server_tags};
  const auto& known = _meta.r1_streams();
  for (cluster_streams* m : _router->members()) {
    if (!m->_hub.list) continue;
    for (auto& st : m->_hub.list()) {
      st.name = r1_key(m->_account, st.name);
      auto it = known.find(st.name);
      if (it == known.end() || it->second.server == _self) report.streams.push_back(std::move(st));
    }
  }
  std::sort(report.streams.begin(), report.streams.end(),
            [](const re::r1_stream& a, const re::r1_stream& b) { return a.name < b.name; });
  _r1_reported_tags = report.tags;
  if (report.streams == _meta.r1_of(_self) && report.tags == _meta.tags_of(_self)) {
    _r1_synced = true;
    return;
  }
  const auto bytes = re::encode(re::meta_op{std::move(report)});
  _r1_report_until_ns = now_ns + kReportWaitNs;
  if (leading) {
    (void)_repl.propose(kMetaGroup, 0, bytes);
    return;
  }
  _host.publish(prefix_of(leader) + "1.R1REPORT", "", "",
                std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

void cluster_streams::on_r1_report(const core::inbound_msg& m) {
  std::string leader;
  if (!meta_leader(leader)) return;  // the reporter sends it again to the next leader
  const std::span<const std::uint8_t> data(reinterpret_cast<const std::uint8_t*>(m.payload.data()),
                                           m.payload.size());
  const auto op = re::decode_meta(data);
  const auto* report = op ? std::get_if<re::r1_streams>(&*op) : nullptr;
  if (report == nullptr) {
    PG_WARN("JetStream cluster: an R1 stream report that does not decode was ignored");
    return;
  }
  if (_meta.removed().count(report->server) ||
      (report->streams == _meta.r1_of(report->server) && report->tags == _meta.tags_of(report->server)))
    return;
  (void)_repl.propose(kMetaGroup, 0, std::vector<std::uint8_t>(data.begin(), data.end()));
}

}  // namespace js
