#pragma once
// A stream's subject rewriting: the ingest transform applied to every
// published subject before it is stored, and RePublish, which sends a copy of each stored
// message to a transformed subject with Nats-Stream/-Subject/-Sequence/-Time-Stamp/
// -Last-Sequence headers (and Nats-Msg-Size, without payload, when headers_only).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "src/js/stream_config.h"
#include "src/js/subject_transform.h"

namespace js {

class subject_rewrites {
 public:
  // From an already validated config (invalid parts are ignored).
  void configure(const stream_config& cfg);

  // The subject to store `subject` under (itself when no transform matches).
  std::string_view ingest(std::string_view subject, std::string& scratch) const;

  struct copy {
    std::string subject;
    std::string headers;
    bool headers_only = false;
  };
  // The republished copy of a stored message, or nullopt (no republish, or src not matched).
  std::optional<copy> republish(std::string_view stream, std::string_view subject, std::string_view headers,
                                std::size_t payload_size, std::uint64_t seq, std::int64_t ts,
                                std::uint64_t last_seq_on_subject) const;
  bool republishes() const { return _republish.has_value(); }

 private:
  std::optional<subject_transform> _ingest;
  std::optional<subject_transform> _republish;
  bool _headers_only = false;
};

}  // namespace js
