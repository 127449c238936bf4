#pragma once
// One big STREAM.CREATE or STREAM.UPDATE in flight (big_request.cc): what the API worker
// decodes and checks, then what the loop applies in slices.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/js/api_errors.h"
#include "src/js/jetstream_service.h"
#include "src/js/stream_config.h"

namespace js {

// Requests at least this big take the worker path; smaller ones stay synchronous (a
// 64 KiB config decodes in well under a millisecond).
constexpr std::size_t kBigRequestBytes = 64 * 1024;
// How long one loop turn may spend subscribing a big stream's subjects.
constexpr std::int64_t kBigSliceNs = 1'000'000;

struct jetstream::big_request {
  // In (set on the loop before the worker starts; read-only there).
  bool update = false;
  std::string token, reply, payload;
  std::int64_t created = 0;  // now for a create, the stream's for an update
  const stream_config* existing = nullptr;  // the stream named `token`, if any
  std::vector<std::string_view> others;     // the other streams' subjects
  // Out of the decode (worker).
  std::optional<api_error> error;
  stream_config cfg;
  bool exists = false;      // an identical stream exists: answer with it
  std::string config_dump;  // to_json(cfg, true), for the reply
  std::string meta_dump;    // the saved config (meta.inf, or the file store's meta record)
  // Apply (loop), with a memory stream's meta.inf written on the worker.
  std::uint64_t ticket = 0;
  bool decoded = false;
  stream* s = nullptr;  // set once applied; a created stream's subjects then go in slices
  bool to_interest = false;  // an update from limits to interest retention
  bool meta_written = false;
  std::string meta_error;
};

// The stream a $JS.API request (the subject after "$JS.API.") is about, or empty:
// STREAM.<op>.<stream>, STREAM.MSG.<op>.<stream>, CONSUMER.<op>.<stream>...,
// CONSUMER.DURABLE.CREATE.<stream>..., CONSUMER.MSG.NEXT.<stream>...
std::string_view api_stream_of(std::string_view rest);

// The pure part of a create or update (the same checks, in the same order, as api_create
// and api_update).
void decode_big_request(jetstream::big_request& job);

}  // namespace js
