#pragma once
// Subject transforms: a source filter and a destination template with
// $N / {{wildcard(N)}}, partition, split, splitfromleft/right, slicefromleft/right, random
// and a trailing `>`. Used by the stream ingest transform and by RePublish. Pure: parse once,
// apply per message.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace js {

class subject_transform {
 public:
  // An empty src means `>`. On failure returns nullopt and sets `error` to nats-server's text
  // ("invalid subject", "invalid mapping destination: <why>").
  static std::optional<subject_transform> parse(std::string_view src, std::string_view dest, std::string& error);

  // The transformed subject, or nullopt when `subject` does not match src.
  std::optional<std::string> apply(std::string_view subject) const;

  const std::string& src() const { return _src; }
  const std::string& dest() const { return _dest; }
  // {{random(P)}} draws from this (tests make it deterministic).
  std::function<std::uint32_t()> rng;

 private:
  enum class fn : std::uint8_t {
    literal, wildcard, partition, split, split_left, split_right, slice_left, slice_right, random, rest
  };
  struct part {
    fn kind = fn::literal;
    std::string text;           // literal token, or split delimiter
    std::vector<int> indexes;   // 1-based wildcard positions
    std::int64_t n = 0;         // partition count, split/slice position or width
  };

  std::string _src, _dest;
  std::vector<std::string> _src_tokens;
  bool _src_rest = false;  // src ends with `>`
  std::vector<part> _parts;
};

// FNV-1a, 32 bit (the hash nats-server's partition() uses).
std::uint32_t fnv1a32(std::string_view data);

}  // namespace js
