#include "src/js/cluster_stream_update.h"

namespace js {

stream_update_plan plan_stream_update(const repl_entries::stream_assign& current, std::string_view name,
                                      std::string_view payload) {
  stream_update_plan p;
  auto fail = [&](api_error e) {
    p.error = std::move(e);
    return p;
  };
  stream_config& cfg = p.cfg;
  if (auto e = parse_stream_config(payload, cfg)) return fail(*e);
  if (name != cfg.name) return fail(make_error(err::name_mismatch));
  if (auto e = normalise(cfg)) return fail(*e);
  if (cfg.sealed) apply_seal(cfg);
  if (auto e = validate(cfg)) return fail(*e);
  stream_config old;
  if (auto e = parse_stream_config(current.config_json, old)) return fail(*e);
  (void)normalise(old);
  if (auto e = check_update(old, cfg)) return fail(*e);
  static_cast<repl_entries::stream_assign&>(p.next) = current;
  p.next.config_json = to_json(cfg, false).dump();
  if (std::size_t(cfg.num_replicas) != current.peers.size()) p.what = stream_update_plan::kind::scale;
  return p;
}

}  // namespace js
