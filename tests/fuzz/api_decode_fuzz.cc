// libFuzzer target over the JetStream API request decoders (client input on $JS.API.>). The
// first byte picks the decoder: stream config (create/update), consumer create, MSG.NEXT pull
// request, the small request structs (purge, msg get/delete, info, names/list, reset,
// snapshot), direct get, or consumer
// pause/unpin; the rest is the body. Invariants: nothing crashes; every refusal carries an err_code and a description; a
// stream config that decodes, normalises and validates is echoed as JSON that decodes again.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>

#include "src/js/consumer_config.h"
#include "src/js/direct_get.h"
#include "src/js/json_decode.h"
#include "src/js/pull_request.h"
#include "src/js/stream_config.h"

namespace {

void check(const std::optional<js::api_error>& e) {
  if (e && (e->err_code == 0 || e->description.empty())) std::abort();
}

void stream_config(std::string_view body) {
  js::stream_config c;
  auto e = js::parse_stream_config(body, c);
  check(e);
  if (e) return;
  if (auto n = js::normalise(c)) return check(n);
  if (auto v = js::validate(c)) return check(v);
  js::stream_config again;
  if (js::parse_stream_config(js::to_json(c, false).dump(), again)) std::abort();
}

void consumer_create(std::string_view body) {
  js::create_request req;
  auto e = js::parse_create_request(body, req);
  check(e);
  if (e) return;
  js::stream_config s;
  s.name = "S";
  s.subjects = {"s.>"};
  if (js::normalise(s)) return;
  if (auto n = js::normalise(req.config, s, req.pedantic)) return check(n);
  check(js::validate(req.config, s));
  (void)js::to_json(req.config, true).dump();
}

void small_requests(std::string_view body) {
  using k = js::jdec::field_kind;
  js::jdec::json out;
  check(js::jdec::decode_request(body, "JSApiStreamPurgeRequest",
                                 {{"filter", k::string}, {"seq", k::u64}, {"keep", k::u64}}, out));
  check(js::jdec::decode_request(body, "JSApiMsgGetRequest",
                                 {{"seq", k::u64}, {"last_by_subj", k::string}, {"next_by_subj", k::string},
                                  {"start_time", k::time}, {"no_hdr", k::boolean}, {"batch", k::int_},
                                  {"max_bytes", k::int_}, {"multi_last", k::strings}, {"up_to_seq", k::u64},
                                  {"up_to_time", k::time}},
                                 out));
  check(js::jdec::decode_request(body, "JSApiStreamNamesRequest", {{"offset", k::int_}, {"subject", k::string}}, out));
  // The rest of the handlers' request structs (stream_api.cc, consumer_api.cc,
  // consumer_reset.cc, stream_snapshot.cc), field for field.
  check(js::jdec::decode_request(body, "JSApiStreamListRequest", {{"offset", k::int_}, {"subject", k::string}}, out));
  check(js::jdec::decode_request(body, "JSApiConsumersRequest", {{"offset", k::int_}}, out));
  check(js::jdec::decode_request(body, "JSApiStreamInfoRequest",
                                 {{"deleted_details", k::boolean}, {"subjects_filter", k::string}, {"offset", k::int_}},
                                 out));
  check(js::jdec::decode_request(body, "JSApiMsgDeleteRequest", {{"seq", k::u64}, {"no_erase", k::boolean}}, out));
  check(js::jdec::decode_request(body, "JSApiConsumerResetRequest", {{"seq", k::u64}}, out));
  check(js::jdec::decode_request(body, "JSApiStreamSnapshotRequest",
                                 {{"deliver_subject", k::string}, {"no_consumers", k::boolean}, {"chunk_size", k::int_},
                                  {"window_size", k::int_}, {"jsck", k::boolean}},
                                 out));
}

void direct_get(std::string_view body) {
  js::direct_request r;
  std::vector<std::string> keys;
  if (auto e = js::decode_direct_request(body, r, keys); e && e->empty()) std::abort();
}

void pause_unpin(std::string_view body) {
  std::optional<std::int64_t> until;
  check(js::parse_pause_request(body, until));
  std::string group;
  auto e = js::parse_unpin_request(body, group);
  check(e);
  if (!e && group.empty()) std::abort();  // accepted only with a group
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 6) {
    case 0: stream_config(body); break;
    case 1: consumer_create(body); break;
    case 2: {
      auto r = js::parse_pull_request(body);
      if (auto* e = std::get_if<js::pull_parse_error>(&r); e && e->description.empty()) std::abort();
      break;
    }
    case 3: small_requests(body); break;
    case 4: direct_get(body); break;
    default: pause_unpin(body); break;
  }
  return 0;
}
