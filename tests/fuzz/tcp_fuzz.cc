// libFuzzer target for the user-space stack's parsers and TCP machine. The input is
// (1) run through parse_ether/parse_ipv4/parse_tcp as one frame, then (2) split into records
// [op u8][len u16][bytes] that drive an ip_stack listening on 4222: op&1 advances the clock
// and polls, op&2 wraps the bytes in valid Ethernet+IPv4 headers (so the fuzzer works on
// TCP headers, options and sequence numbers), else the bytes are a raw frame. Checksums are
// not verified, to reach the state machine. Invariants (abort on break): every view lies
// inside its input; on_close comes once per on_open and never for an unknown id.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "net/tcp/ip_stack.h"

namespace {
using namespace net::tcp;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "tcp_fuzz invariant broken: %s\n", what);
  std::abort();
}
void check(bool ok, const char* what) {
  if (!ok) fail(what);
}
bool inside(bytes inner, bytes outer) {
  return inner.empty() || (inner.data() >= outer.data() && inner.data() + inner.size() <= outer.data() + outer.size());
}

constexpr std::uint32_t kUs = 0x0a000002, kPeer = 0x0a000001;
const mac_addr kUsMac{2, 0, 0, 0, 0, 2};

struct sink final : frame_io {
  std::vector<std::uint8_t> buf;
  std::size_t frames = 0;
  std::uint8_t* alloc_frame(std::size_t len) override {
    check(len >= kEtherHdr && len <= 65535 + kEtherHdr, "frame length");
    buf.assign(len, 0);
    return buf.data();
  }
  void commit_frame() override {
    ++frames;
    // Whatever we send must parse back (TCP/IP frames with valid checksums).
    auto e = parse_ether(buf);
    check(e.has_value(), "sent frame parses");
    if (e->type != kEtherIpv4) return;
    ipv4_packet ip;
    check(parse_ipv4(e->payload, ip) == ipv4_verdict::ok, "sent IPv4 header valid");
    if (ip.proto != kProtoTcp) return;
    tcp_segment s;
    check(parse_tcp(ip.payload, ip.src, ip.dst, s) == tcp_verdict::ok, "sent TCP segment valid");
  }
};

struct app final : stack_handler {
  ip_stack* stack = nullptr;
  std::set<std::uint64_t> open, closed;
  void on_open(std::uint64_t id, std::uint32_t, std::uint16_t) override {
    check(open.insert(id).second && !closed.count(id), "on_open once");
  }
  void on_data(std::uint64_t id, std::string_view b) override {
    check(open.count(id) && !closed.count(id), "on_data on an open id");
    if (auto* out = stack->send_buffer(id)) out->append(b.substr(0, 64));  // echo a little
    if (!b.empty() && b[0] == 'C') stack->close(id, true);
    if (!b.empty() && b[0] == 'P') stack->pause(id);
    if (!b.empty() && b[0] == 'R') stack->resume(id);
  }
  void on_close(std::uint64_t id) override {
    check(open.count(id) && closed.insert(id).second, "on_close once per on_open");
  }
};

void parsers(bytes in) {
  auto e = parse_ether(in);
  if (!e) return;
  check(inside(e->payload, in), "ether payload inside");
  if (auto a = parse_arp(e->payload)) (void)a;
  ipv4_packet ip;
  if (parse_ipv4(e->payload, ip, false) != ipv4_verdict::ok) return;
  check(inside(ip.payload, e->payload), "ipv4 payload inside");
  tcp_segment s;
  if (parse_tcp(ip.payload, ip.src, ip.dst, s, false) != tcp_verdict::ok) return;
  check(inside(s.payload, ip.payload), "tcp payload inside");
  check(tcp_header_len(s.h) <= 28, "header length of what we would write");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  parsers(bytes(data, size));
  sink io;
  app handler;
  stack_config cfg;
  cfg.mac = kUsMac;
  cfg.ip = kUs;
  cfg.verify_ip_checksum = cfg.verify_tcp_checksum = false;
  cfg.tcp.rcv_buf = 8192;  // small windows reach the zero-window paths quickly
  ip_stack stack(cfg, io);
  handler.stack = &stack;
  stack.set_handler(&handler);
  stack.listen(4222);
  base::nanos now = 0;
  std::size_t i = 0;
  std::vector<std::uint8_t> frame;
  while (i + 3 <= size) {
    const std::uint8_t op = data[i];
    const std::size_t len = std::min<std::size_t>(std::size_t(data[i + 1]) | std::size_t(data[i + 2]) << 8, size - i - 3);
    const std::uint8_t* p = data + i + 3;
    i += 3 + len;
    if (op & 1) {
      now += base::nanos(op) * 10 * base::kMilli;
      stack.poll(now);
    }
    if (op & 2) {
      frame.assign(kEtherHdr + kIpv4Hdr + len, 0);
      write_ether(frame.data(), kUsMac, mac_addr{2, 0, 0, 0, 0, 1}, kEtherIpv4);
      write_ipv4(frame.data() + kEtherHdr, kPeer, kUs, kProtoTcp, std::uint16_t(len), 0);
      if (len) std::memcpy(frame.data() + kEtherHdr + kIpv4Hdr, p, len);
    } else {
      frame.assign(p, p + len);
    }
    stack.input(frame, now);
    for (std::uint64_t id : handler.open)
      if (!handler.closed.count(id)) stack.push(id, now);
  }
  // Let every timer run out: connections must reach CLOSED or stay consistent.
  for (int k = 0; k < 64 && stack.next_timer() != 0; ++k) {
    now = std::max(now, stack.next_timer());
    stack.poll(now);
  }
  return 0;
}
