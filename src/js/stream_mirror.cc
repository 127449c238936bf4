// The stream side of mirrors and sources: which links a stream has,
// where each resumes after a restart, and how a copied message is stored. A mirror keeps the
// origin's sequence and timestamp (lost origin sequences become gaps); a sourced message goes
// through the ordinary publish path with a Nats-Stream-Source header, so dedup, limits and
// the stream's own transform apply to it as to any publish.
#include <unordered_map>

#include "src/js/json_util.h"
#include "src/js/source_link.h"
#include "src/js/stream.h"

namespace js {

namespace {
// A source resumes after the last message it brought; found by reading the stream backwards
// for Nats-Stream-Source headers, at most this many messages.
constexpr std::uint64_t kResumeScanLimit = 1'000'000;
}  // namespace

std::vector<std::uint64_t> source_resume_points(storage::stream_store& store, const std::vector<source_spec>& specs) {
  std::vector<std::uint64_t> out(specs.size(), 0);
  std::unordered_map<std::string, std::uint64_t> resume;  // the newest Nats-Stream-Source per origin
  const std::uint64_t first = store.first_seq(), last = store.last_seq();
  std::uint64_t scanned = 0;
  for (std::uint64_t seq = last; seq >= first && seq > 0 && resume.size() < specs.size() && scanned < kResumeScanLimit;
       --seq, ++scanned) {
    auto m = store.load(seq);
    if (!m.ok() || m->headers.empty()) continue;
    if (auto v = find_header(m->headers, "Nats-Stream-Source"))
      if (auto p = parse_stream_source_header(*v)) resume.try_emplace(p->first, p->second);
  }
  for (std::size_t i = 0; i < specs.size(); ++i)
    if (auto it = resume.find(specs[i].name); it != resume.end()) out[i] = it->second;
  return out;
}

void stream::configure_sources() {
  ojson want = ojson::object();
  if (_cfg.has_mirror()) want["mirror"] = _cfg.mirror;
  if (_cfg.has_sources()) want["sources"] = _cfg.sources;
  if (want == _links_cfg && !(_links.empty() && !want.empty())) return;
  for (auto& l : _links) l->stop(true);  // a config change: the origin's consumers go now
  stop_sources();
  _links_cfg = want;
  if (_cfg.has_mirror()) {
    _links.push_back(std::make_unique<source_link>(_link_bus, *this, parse_source_spec(_cfg.mirror), true, _store->last_seq()));
    return;
  }
  if (!_cfg.has_sources()) return;
  std::vector<source_spec> specs;
  for (const auto& j : _cfg.sources) specs.push_back(parse_source_spec(j));
  const auto resume = source_resume_points(*_store, specs);
  for (std::size_t i = 0; i < specs.size(); ++i)
    _links.push_back(std::make_unique<source_link>(_link_bus, *this, std::move(specs[i]), false, resume[i]));
}

void stream::stop_sources() {
  for (auto& l : _links) l->stop(false);
  _links.clear();
  _links_cfg = ojson();
}

std::size_t stream::poll_sources(std::int64_t now) {
  std::size_t work = 0;
  for (std::size_t i = 0; i < _links.size(); ++i) work += _links[i]->poll(now);
  return work;
}

copy_target::copy_result stream::store_copied(const source_spec& src, bool mirror, std::string_view subject,
                                              std::string_view origin_subject, std::string_view headers,
                                              std::string_view payload, const delivery_meta& d, std::uint64_t skip) {
  using r = copy_result;
  if (_closed) return r::refused;
  const std::string hdr = strip_copy_headers(headers, !mirror);
  if (!mirror) {
    // The ordinary publish path (no reply: nobody waits for a PubAck).
    const std::string with_source = append_header(hdr, "Nats-Stream-Source", stream_source_header(src, d.stream_seq, origin_subject));
    core::inbound_msg m;
    m.subject = subject;
    m.headers = with_source;
    m.payload = payload;
    std::optional<api_error> refused;
    _copy_error = &refused;
    on_msg(m);
    _copy_error = nullptr;
    return refused ? r::refused : r::stored;  // e.g. discard new at a limit: copied again from this message later
  }
  std::string transformed;
  const std::string_view stored_subject = _rewrites.ingest(subject, transformed);
  if (_store->last_seq() >= d.stream_seq) return r::stored;  // already there
  if (skip > 0 || _store->last_seq() + 1 < d.stream_seq) {
    // Origin messages that were removed before we copied them: the same gap here.
    if (auto st = _store->skip(d.stream_seq - 1 - _store->last_seq()); !st.ok()) return r::refused;
  }
  auto seq = _store->append(stored_subject, hdr, payload, d.ts, mirrored_ttl(_cfg.allow_msg_ttl, hdr));
  if (!seq.ok()) return r::refused;
  trim_after_append();
  if (_events) _events->on_stored(*seq, stored_subject);
  return r::stored;
}

void stream::add_sources_info(ojson& info, std::int64_t now) const {
  if (_links.empty()) return;
  if (_cfg.has_mirror()) {
    info["mirror"] = _links.front()->info_json(now);
    return;
  }
  ojson arr = ojson::array();
  for (const auto& l : _links) arr.push_back(l->info_json(now));
  info["sources"] = arr;
}

void stream::subscribe_mirror_direct() {
  if (!_cfg.mirror_direct || !_cfg.has_mirror()) return;
  const auto origin = parse_source_spec(_cfg.mirror).name;
  std::vector<std::string> prefixes{"$JS.API"};
  if (!_host.domain().empty()) prefixes.push_back("$JS." + _host.domain() + ".API");
  for (const auto& p : prefixes) {
    const std::string base = p + ".DIRECT.GET." + origin;
    for (const auto& subj : {base, base + ".>"})
      if (auto id = _host.subscribe(subj, "_sys_", &_direct); id != 0) _direct_ids.push_back(id);
  }
}

}  // namespace js
