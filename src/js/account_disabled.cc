#include "src/js/account_disabled.h"

#include "src/core/service.h"
#include "src/js/api_errors.h"
#include "src/js/jetstream.h"

namespace js {
namespace {

using ojson = nlohmann::ordered_json;

enum class page { none, stream_names, stream_list, info, purge, restore, consumers };

struct api_route {
  std::string_view prefix;  // after "$JS.API."; a trailing '.' takes a name
  std::string_view type;
  page extra;
  std::uint16_t code;
};

// As nats-server 2.9.10 answers them (checked against it, see accounts_js_test.cc).
constexpr api_route kRoutes[] = {
    {"INFO", "account_info_response", page::none, err::not_enabled_for_account},
    {"STREAM.CREATE.", "stream_create_response", page::none, err::not_enabled_for_account},
    {"STREAM.UPDATE.", "stream_update_response", page::none, err::not_enabled_for_account},
    {"STREAM.NAMES", "stream_names_response", page::stream_names, err::not_enabled_for_account},
    {"STREAM.LIST", "stream_list_response", page::stream_list, err::not_enabled_for_account},
    {"STREAM.INFO.", "stream_info_response", page::info, err::not_enabled_for_account},
    {"STREAM.DELETE.", "stream_delete_response", page::none, err::not_enabled_for_account},
    {"STREAM.PURGE.", "stream_purge_response", page::purge, err::not_enabled_for_account},
    {"STREAM.MSG.GET.", "stream_msg_get_response", page::none, err::not_enabled_for_account},
    {"STREAM.MSG.DELETE.", "stream_msg_delete_response", page::none, err::not_enabled_for_account},
    {"STREAM.SNAPSHOT.", "stream_snapshot_response", page::none, err::not_enabled_for_account},
    {"STREAM.RESTORE.", "stream_restore_response", page::restore, err::not_enabled_for_account},
    {"STREAM.PEER.REMOVE.", "stream_remove_peer_response", page::none, err::clustering_required},
    {"STREAM.LEADER.STEPDOWN.", "stream_leader_stepdown_response", page::none, err::clustering_required},
    {"CONSUMER.CREATE.", "consumer_create_response", page::none, err::not_enabled_for_account},
    {"CONSUMER.DURABLE.CREATE.", "consumer_create_response", page::none, err::not_enabled_for_account},
    {"CONSUMER.DELETE.", "consumer_delete_response", page::none, err::not_enabled_for_account},
    {"CONSUMER.INFO.", "consumer_info_response", page::none, err::not_enabled_for_account},
    {"CONSUMER.NAMES.", "consumer_names_response", page::consumers, err::not_enabled_for_account},
    {"CONSUMER.LIST.", "consumer_list_response", page::consumers, err::not_enabled_for_account},
    {"CONSUMER.LEADER.STEPDOWN.", "consumer_leader_stepdown_response", page::none, err::clustering_required},
};

class not_enabled_service final : public core::service, public core::internal_handler {
 public:
  bool start(core::service_host& host, std::string& error) override {
    _host = &host;
    _sub = host.subscribe("$JS.API.>", "", this);
    if (_sub == 0) error = "cannot subscribe $JS.API.>";
    return _sub != 0;
  }
  void stop() override {
    if (_sub) _host->unsubscribe(_sub);
    _sub = 0;
  }
  void on_msg(const core::inbound_msg& m) override {
    if (m.reply.empty()) return;
    if (auto j = not_enabled_reply(m.subject)) _host->publish(m.reply, "", "", j->dump());
  }

 private:
  core::service_host* _host = nullptr;
  std::uint64_t _sub = 0;
};

}  // namespace

std::optional<ojson> not_enabled_reply(std::string_view subject) {
  constexpr std::string_view kApi = "$JS.API.";
  if (!subject.starts_with(kApi)) return std::nullopt;
  const std::string_view rest = subject.substr(kApi.size());
  for (const auto& r : kRoutes) {
    const bool named = r.prefix.ends_with('.');
    if (named ? !(rest.starts_with(r.prefix) && rest.size() > r.prefix.size()) : rest != r.prefix) continue;
    ojson j;
    j["type"] = "io.nats.jetstream.api.v1." + std::string(r.type);
    j["error"] = to_json(make_error(r.code));
    if (r.extra == page::stream_names || r.extra == page::stream_list || r.extra == page::info ||
        r.extra == page::consumers) {
      j["total"] = 0;
      j["offset"] = 0;
      j["limit"] = 0;
    }
    if (r.extra == page::stream_names) j["streams"] = nullptr;
    if (r.extra == page::stream_list) j["streams"] = ojson::array();
    if (r.extra == page::consumers) j["consumers"] = ojson::array();
    if (r.extra == page::purge) j["purged"] = 0;
    if (r.extra == page::restore) j["deliver_subject"] = "";
    return j;
  }
  return std::nullopt;
}

std::unique_ptr<core::service> make_jetstream_disabled() { return std::make_unique<not_enabled_service>(); }

}  // namespace js
