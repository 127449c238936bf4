// Plain TCP for the modes that bypass libnats (raw-throughput, pipelined batches): the
// client library's per-message costs would otherwise be what they measure.
#pragma once

#include <string>

namespace peregrine::bench {

// "nats://host:port" -> host ("localhost" as 127.0.0.1) and port; false if unparsable.
bool parse_url(const std::string& url, std::string& host, int& port);
// A connected TCP socket with TCP_NODELAY, or -1.
int dial(const std::string& host, int port);
bool write_all(int fd, const char* p, size_t n);
// Reads until `needle` has been seen (a handshake's PONG); false on EOF or after 5 s.
bool read_until(int fd, const char* needle);

constexpr const char* kRawConnect = "CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":true}\r\n";

}  // namespace peregrine::bench
