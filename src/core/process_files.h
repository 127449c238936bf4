#pragma once
// Process management around the server: the pid file, the ports file (nats-server's
// <dir>/<exe>_<pid>.ports that test launchers and process managers wait for) and
// `--signal cmd[=pid]`, which signals a running server.
#include <string>
#include <vector>

namespace core {

// "nats://host:port" URLs for a listener; a wildcard host (0.0.0.0, ::, empty) expands to
// every interface address, as nats-server lists them.
std::vector<std::string> listen_urls(const std::string& scheme, const std::string& host, int port);

std::string ports_file_path(const std::string& dir, const std::string& exe_path);
// {"nats":[...],"monitoring":[...]} (empty lists left out, as nats-server does); written to a
// temp file and renamed so a reader never sees half of it.
bool write_ports_file(const std::string& path, const std::vector<std::string>& nats,
                      const std::vector<std::string>& monitoring, std::string& error);
bool write_pid_file(const std::string& path, std::string& error);

// --signal: `spec` is stop|quit|term|reload|reopen|ldm, optionally "=<pid or pid file>";
// without a pid, the one running process named like `exe_path` is signalled. Returns the
// exit code; `message` explains a failure.
int send_signal_command(const std::string& spec, const std::string& exe_path, std::string& message);

}  // namespace core
