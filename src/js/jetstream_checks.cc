// What a stream create or update is checked against beyond its own config: the other streams
// (subject overlap, a mirror's origin, source cycles) and the storage limits of the account
// and the server (resources.h has the rules; the counters are kept with the placement table).
#include "src/js/cluster_streams.h"
#include "src/js/jetstream_owners.h"
#include "src/js/jetstream_service.h"
#include "src/js/stream_source.h"

namespace js {

// The cross-stream checks read the hub's table and subject registry, which hold every owner's
// streams; an owner reads them only while the hub holds stream changes back for its request.
std::optional<api_error> jetstream::check_overlap(const stream_config& cfg) {
  if (_owners->subjects.overlaps(cfg.subjects, cfg.name)) return make_error(err::subjects_overlap);
  // In a cluster (the hub), the replicated streams and the other servers' R1 streams too.
  if (_cluster && _cluster->overlaps_cluster_streams(cfg, false)) return make_error(err::subjects_overlap);
  return std::nullopt;
}

// A mirror whose origin is here: its max_msg_size may not be smaller (10030), and
// mirror_direct follows the origin's allow_direct.
std::optional<api_error> jetstream::check_mirror_origin(stream_config& cfg) {
  if (!cfg.has_mirror()) return std::nullopt;
  auto it = table().find(parse_source_spec(cfg.mirror).name);
  if (it == table().end()) return std::nullopt;
  const stream_config& o = it->second.cfg;
  if (cfg.max_msg_size > 0 && o.max_msg_size > 0 && cfg.max_msg_size < o.max_msg_size) return make_error(10030);
  cfg.mirror_direct = o.allow_direct;
  return std::nullopt;
}

// The external prefixes, and a stream sourcing or mirroring itself directly or through
// others here (10052 "detected cycle").
std::optional<api_error> jetstream::check_origins(const stream_config& cfg) const {
  if (!cfg.has_mirror() && !cfg.has_sources()) return std::nullopt;
  return check_source_origins(cfg, [this](std::string_view name) -> const stream_config* {
    auto it = table().find(name);
    return it == table().end() ? nullptr : &it->second.cfg;
  });
}

bool jetstream::mirror_serves_direct(std::string_view origin) const {
  for (const auto& [name, p] : table()) {
    const auto& c = p.cfg;
    if (c.mirror_direct && c.has_mirror() && c.mirror.value("name", std::string()) == origin) return true;
  }
  return false;
}

// ---- server-wide and account accounting (resources.h has the rules)

std::int64_t jetstream::storage_limit(storage_type t) const {
  const auto& o = _host->options();
  return t == storage_type::memory ? o.max_memory_store : o.max_file_store;
}

// Reservations from the account's table; use from the account's counters, less what the
// excepted stream (being updated, so on this owner) last reported.
storage_usage jetstream::usage(storage_type t, std::string_view except_stream) const {
  storage_usage u;
  u.used = used_bytes(t);
  if (auto it = _streams.find(except_stream); it != _streams.end() && it->second->get_stream().config().storage == t)
    u.used -= it->second->reported_bytes();
  const auto& acc = _owners->limits;
  if (storage_limit(t) < 0 && (t == storage_type::memory ? acc.max_memory : acc.max_file) < 0)
    return u;  // nothing to reserve against: no loop over the streams
  for (const auto& [name, p] : table())
    if (p.cfg.storage == t && name != except_stream && p.cfg.max_bytes > 0) u.reserved += p.cfg.max_bytes;
  return u;
}

std::optional<api_error> jetstream::check_limits(const stream_config& cfg, std::string_view except_stream,
                                                 bool create, std::int64_t replicas) const {
  const auto& acc = _owners->limits;
  // The account's max_bytes rules (nats-server's checkStreamCfg): required, and at most the
  // account's per-stream ceiling of the stream's storage type.
  const std::int64_t stream_bytes =
      cfg.storage == storage_type::memory ? acc.memory_max_stream_bytes : acc.store_max_stream_bytes;
  if (acc.max_bytes_required && cfg.max_bytes <= 0) return make_error(err::max_bytes_required);
  if (stream_bytes > 0 && cfg.max_bytes > stream_bytes) return make_error(err::max_stream_bytes_exceeded);
  const storage_type t = cfg.storage;
  const std::int64_t acc_bytes = t == storage_type::memory ? acc.max_memory : acc.max_file;
  // (the replicated streams' configs are parsed only when a limit needs them)
  cluster_streams::limit_usage elsewhere;
  if (_cluster && (acc.max_streams > 0 || acc_bytes >= 0)) {
    elsewhere = _cluster->limit_usage_of(except_stream);
  } else if (!_cluster) {  // another owner: the hub's last count (an R1 stream's except is not in it)
    elsewhere.streams = _owners->cluster_stream_count.load(std::memory_order_relaxed);
    for (int i : {0, 1}) elsewhere.reserved[i] = _owners->cluster_reserved[i].load(std::memory_order_relaxed);
  }
  // nats-server's order (jsAccount.checkLimits): streams, consumers, then bytes.
  if (create && acc.max_streams > 0 && std::int64_t(table().size() + elsewhere.streams) >= acc.max_streams)
    return make_error(err::max_streams);
  if (acc.max_consumers > 0 && cfg.max_consumers > acc.max_consumers) return make_error(err::max_consumers);
  storage_usage mine = usage(t, except_stream);
  mine.reserved += elsewhere.reserved[storage_index(t)];
  if (auto e = check_reservation(acc_bytes, mine, cfg, replicas)) return e;
  if (storage_limit(t) >= 0) {  // the server's, over every account
    storage_usage all;
    all.reserved = _owners->server->reserved[storage_index(t)].load(std::memory_order_relaxed);
    if (auto it = table().find(except_stream); it != table().end() && it->second.cfg.storage == t)
      all.reserved -= reservation(it->second.cfg);
    if (auto e = check_reservation(storage_limit(t), all, cfg)) return e;
  }
  return std::nullopt;
}

void jetstream::publish_cluster_usage() {
  const auto& acc = _owners->limits;
  if (_owners->size() == 1 || _cluster->meta_version() == _cluster_usage_version) return;
  if (acc.max_streams <= 0 && acc.max_memory < 0 && acc.max_file < 0) return;
  _cluster_usage_version = _cluster->meta_version();
  const auto u = _cluster->limit_usage_of({});
  _owners->cluster_stream_count.store(u.streams, std::memory_order_relaxed);
  for (int i : {0, 1}) _owners->cluster_reserved[i].store(u.reserved[i], std::memory_order_relaxed);
}

std::int64_t jetstream::max_consumers_of(const stream_config& cfg) const {
  const std::int64_t acc = _owners->limits.max_consumers;
  std::int64_t m = cfg.max_consumers;
  if (m <= 0 || (acc > 0 && acc < m)) m = acc;
  return m;
}

bool jetstream::storage_exhausted(storage_type t) const {
  const std::int64_t limit = storage_limit(t);
  return limit >= 0 && js::storage_exhausted(limit, storage_usage{0, _owners->server->used[storage_index(t)].load(
                                                                          std::memory_order_relaxed)});
}

std::optional<api_error> jetstream::account_limit_error(storage_type t, std::uint64_t size) const {
  const auto& acc = _owners->limits;
  const std::int64_t limit = t == storage_type::memory ? acc.max_memory : acc.max_file;
  if (limit < 0 || used_bytes(t) + std::int64_t(size) <= limit) return std::nullopt;
  return make_error(err::account_resources_exceeded);
}

}  // namespace js
