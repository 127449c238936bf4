#include "src/core/monitor.h"

#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cstring>

#include "src/base/log.h"
#include "src/core/server.h"

namespace core {
namespace {

MHD_Result collect_arg(void* cls, MHD_ValueKind, const char* key, const char* value) {
  (*static_cast<http_query*>(cls))[key ? key : ""] = value ? value : "";
  return MHD_YES;
}

MHD_Result on_request(void* cls, MHD_Connection* conn, const char* url, const char* method, const char*,
                      const char*, size_t* upload_size, void** con_cls) {
  if (*con_cls == nullptr) {  // first call: headers only; answer on the next
    static int marker;
    *con_cls = &marker;
    return MHD_YES;
  }
  *upload_size = 0;  // bodies are ignored
  auto* self = static_cast<monitor*>(cls);
  http_reply r;
  if (std::strcmp(method, "GET") != 0 && std::strcmp(method, "HEAD") != 0) {
    r = {405, "text/plain; charset=utf-8", "method not allowed\n"};
  } else {
    std::string path = url ? url : "/";
    const std::string base = self->base_path();
    if (!base.empty()) {
      if (path.compare(0, base.size(), base) != 0 || (path.size() > base.size() && path[base.size()] != '/')) {
        path = "\x01";  // outside the base path: 404
      } else {
        path = path.substr(base.size());
      }
    }
    if (path.empty()) path = "/";
    http_query q;
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_arg, &q);
    r = self->handle(path, q);
  }
  MHD_Response* resp =
      MHD_create_response_from_buffer(r.body.size(), r.body.data(), MHD_RESPMEM_MUST_COPY);
  MHD_add_response_header(resp, "Content-Type", r.content_type.c_str());
  const MHD_Result ret = MHD_queue_response(conn, unsigned(r.status), resp);
  MHD_destroy_response(resp);
  return ret;
}

}  // namespace

monitor::~monitor() { stop(); }

bool monitor::start(const std::string& host, int port, const std::string& base_path, std::string& error) {
  _base = base_path;
  if (!_base.empty() && _base.front() != '/') _base.insert(0, "/");
  while (!_base.empty() && _base.back() == '/') _base.pop_back();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port < 0 ? 0 : port);
  const char* node = host.empty() ? "0.0.0.0" : host.c_str();
  if (const int rc = getaddrinfo(node, service.c_str(), &hints, &res); rc != 0 || !res) {
    error = "cannot resolve monitoring host " + host + ": " + gai_strerror(rc);
    return false;
  }
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
  if (res->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
  _daemon = MHD_start_daemon(flags, 0, nullptr, nullptr, &on_request, this, MHD_OPTION_SOCK_ADDR, res->ai_addr,
                             MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_LISTENING_ADDRESS_REUSE, 1u,
                             MHD_OPTION_END);
  freeaddrinfo(res);
  if (!_daemon) {
    error = "cannot listen for monitoring on " + host + ":" + std::to_string(port) + ": " + std::strerror(errno);
    return false;
  }
  const MHD_DaemonInfo* info = MHD_get_daemon_info(_daemon, MHD_DAEMON_INFO_BIND_PORT);
  _port = info ? info->port : port;
  return true;
}

void monitor::stop() {
  if (_daemon) MHD_stop_daemon(_daemon);
  _daemon = nullptr;
}

http_reply monitor::handle(const std::string& path, const http_query& q) {
  static const std::map<std::string, http_reply (*)(server&, const http_query&)> routes = {
      {"/connz", monitor_connz},       {"/subsz", monitor_subsz},       {"/subscriptionsz", monitor_subsz},
      {"/jsz", monitor_jsz},           {"/healthz", monitor_healthz},   {"/routez", monitor_routez},
      {"/leafz", monitor_leafz},       {"/gatewayz", monitor_gatewayz}, {"/accountz", monitor_accountz},
      {"/accstatz", monitor_accstatz}, {"/metrics", monitor_metrics},
  };
  const bool known = path == "/" || path == "/varz" || routes.count(path);
  if (!known) return {404, "text/plain; charset=utf-8", "404 page not found\n"};
  std::map<std::string, std::uint64_t> stats;
  {
    std::lock_guard lk(_stats_mu);
    ++_req_stats[path];
    stats = _req_stats;
  }
  if (path == "/") return {200, "text/html; charset=utf-8", monitor_index_html()};
  if (path == "/varz") return monitor_varz(_srv, q, stats);
  return routes.at(path)(_srv, q);
}

}  // namespace core
