#pragma once
// A tcp_output that records what the machine did, for the tcp unit tests.
#include <string>
#include <vector>

#include "net/tcp/tcp_conn.h"

namespace tcptest {

struct sent_segment {
  net::tcp::tcp_header h;
  std::string payload;
};

struct recorder final : net::tcp::tcp_output {
  std::vector<sent_segment> segs;
  std::string data;
  std::vector<net::tcp::tcp_event> events;
  void send(const net::tcp::tcp_header& h, std::string_view p) override { segs.push_back({h, std::string(p)}); }
  void deliver(std::string_view d) override { data.append(d); }
  void event(net::tcp::tcp_event e) override { events.push_back(e); }
  std::vector<sent_segment> take() {
    auto s = std::move(segs);
    segs.clear();
    return s;
  }
  bool has(net::tcp::tcp_event e) const {
    for (auto x : events)
      if (x == e) return true;
    return false;
  }
};

}  // namespace tcptest
