// The hub's stream storage: stream directories, stores opened or made, configs saved as meta
// (in a file stream's own log, a memory stream's meta.inf) and the streams loaded at start.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "src/base/log.h"
#include "src/js/jetstream_owners.h"
#include "src/js/jetstream_service.h"
#include "src/js/json_util.h"
#include "storage/file_store.h"
#include "storage/memory_store.h"

namespace js {

namespace fs = std::filesystem;

std::string jetstream::streams_dir() const {
  return _host->options().store_dir + "/jetstream/" + _owners->limits.account + "/streams";
}

namespace {
constexpr const char* kStreamMetaKey = "stream";
}  // namespace

storage::file_store* jetstream::file_store_of(stream& s) {
  if (s.config().storage != storage_type::file) return nullptr;
  return dynamic_cast<storage::file_store*>(&s.store());
}

bool jetstream::write_store_meta(stream& s, const std::string& key, std::string value, std::string& error) {
  storage::file_store* store = file_store_of(s);
  base::status st = store ? store->set_meta(key, std::move(value)) : base::status(base::errc::internal);
  // Written before the API call is answered (it survives kill -9 from then on). A new
  // store's first-block syncs may still be running off-thread; messages wait for them.
  if (st) st = store->write_through();
  if (!st) {
    error = fmt::format("cannot write metadata '{}' of stream '{}': {}", key, s.config().name,
                        base::errc_name(st.code()));
    return false;
  }
  return true;
}

bool jetstream::save_meta(stream& s, std::string& error) {
  ojson j = to_json(s.config(), false);
  j["created"] = base::rfc3339_nano(s.created());
  return save_meta_text(s, j.dump(), error);
}

bool jetstream::save_meta_text(stream& s, std::string text, std::string& error) {
  if (!file_store_of(s)) return write_file_atomic(s.dir(), "meta.inf", text, error);
  if (!write_store_meta(s, kStreamMetaKey, std::move(text), error)) return false;
  // A meta.inf from before configs lived in the log: the log wins at load, so drop the stale copy.
  std::error_code ec;
  fs::remove(s.dir() + "/meta.inf", ec);
  return true;
}

std::unique_ptr<storage::file_store> jetstream::open_file_store(const std::string& name, const std::string& dir,
                                                                std::string& error) {
  storage::file_store_config fc;
  fc.dir = dir + "/msgs";
  fc.dur = _host->options().durability == "sync" ? storage::durability::sync : storage::durability::write;
  fc.acct = storage::byte_accounting::file;
  fc.block_size = 8ull << 20;
  fc.first_block_size = 16ull << 10;  // a small stream (a KV bucket) takes 16 KiB, not 8 MiB
  auto fsr = storage::file_store::open(fc);
  if (!fsr.ok()) {
    error = std::string("cannot open stream store: ") + std::string(base::errc_name(fsr.code()));
    return nullptr;
  }
  const auto& rep = (*fsr)->recovery();
  for (const auto& note : rep.notes) PG_WARN("JetStream stream '{}': {}", name, note);
  return std::move(*fsr);
}

std::unique_ptr<storage::stream_store> jetstream::open_store(const stream_config& cfg, const std::string& dir,
                                                             std::string& error) {
  if (cfg.storage == storage_type::memory)
    return std::make_unique<storage::memory_store>(storage::byte_accounting::memory);
  return open_file_store(cfg.name, dir, error);
}

std::unique_ptr<stream_group> jetstream::make_stream(stream_config cfg, std::int64_t created, std::string& error,
                                               std::unique_ptr<storage::stream_store> store) {
  const std::string dir = streams_dir() + "/" + cfg.name;
  if (!store) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) {
      error = "cannot create " + dir + ": " + ec.message();
      return nullptr;
    }
    store = open_store(cfg, dir, error);
  }
  if (!store) return nullptr;
  return std::make_unique<stream_group>(*this, std::move(cfg), created, dir, std::move(store));
}

void jetstream::load_streams() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(streams_dir(), ec)) {
    if (!entry.is_directory()) continue;
    const std::string name = entry.path().filename().string();
    if (owner_of(_owners->limits.account, name, _owners->size()) != _index) continue;  // another owner thread's
    std::string text, error;
    if (std::ifstream in(entry.path() / "meta.inf"); in) {
      std::stringstream ss;
      ss << in.rdbuf();
      text = ss.str();
    }
    // A file stream's config is in its log (a meta.inf there is from an older version).
    std::unique_ptr<storage::file_store> fstore;
    if (fs::exists(entry.path() / "msgs")) {
      fstore = open_file_store(name, entry.path().string(), error);
      if (!fstore) {
        PG_ERROR("JetStream: cannot restore stream '{}': {}", name, error);
        continue;
      }
      if (auto it = fstore->meta().find(kStreamMetaKey); it != fstore->meta().end()) text = it->second;
    }
    auto j = nlohmann::ordered_json::parse(text, nullptr, false);  // key order kept
    std::optional<stream_config> cfg;
    if (!text.empty() && !j.is_discarded()) cfg = config_from_json(j);
    if (!cfg || cfg->name != name) {
      PG_WARN("JetStream: skipping stream directory {} (unreadable metadata)", entry.path().string());
      if (fstore) (void)fstore->close();
      continue;
    }
    std::int64_t created = now();
    if (j.contains("created") && j["created"].is_string())
      if (auto t = parse_time(j["created"].get<std::string>())) created = *t;
    std::unique_ptr<storage::stream_store> store;
    if (cfg->storage == storage_type::file) store = std::move(fstore);
    if (fstore) (void)fstore->close();
    auto s = make_stream(*cfg, created, error, std::move(store));
    if (!s) {
      PG_ERROR("JetStream: cannot restore stream '{}': {}", cfg->name, error);
      continue;
    }
    s->get_stream().subscribe();
    const auto st = s->get_stream().store().state(false);
    PG_INFO("  Restored {} messages for stream '{} > {}'", st.msgs, account(), cfg->name);
    stream_group& ref = *s;
    place(std::move(s));
    load_consumers(ref);
    count_consumers(std::int64_t(ref.consumers().size()));
  }
}

}  // namespace js
