#include "src/core/process_files.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace core {
namespace {

std::string basename_of(const std::string& p) {
  const auto slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

std::string url(const std::string& scheme, const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos;
  return scheme + "://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

}  // namespace

std::vector<std::string> listen_urls(const std::string& scheme, const std::string& host, int port) {
  std::vector<std::string> out;
  const bool any = host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]";
  if (!any) {
    out.push_back(url(scheme, host, port));
    return out;
  }
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* a = list; a; a = a->ifa_next) {
      if (!a->ifa_addr || !(a->ifa_flags & IFF_UP)) continue;
      char buf[INET6_ADDRSTRLEN] = {};
      if (a->ifa_addr->sa_family == AF_INET) {
        inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, buf, sizeof buf);
      } else if (a->ifa_addr->sa_family == AF_INET6 && host != "0.0.0.0") {
        inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr, buf, sizeof buf);
      } else {
        continue;
      }
      out.push_back(url(scheme, buf, port));
    }
    freeifaddrs(list);
  }
  if (out.empty()) out.push_back(url(scheme, "127.0.0.1", port));
  return out;
}

std::string ports_file_path(const std::string& dir, const std::string& exe_path) {
  return (std::filesystem::path(dir) / (basename_of(exe_path) + "_" + std::to_string(getpid()) + ".ports")).string();
}

bool write_ports_file(const std::string& path, const std::vector<std::string>& nats,
                      const std::vector<std::string>& monitoring, std::string& error) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  if (!nats.empty()) j["nats"] = nats;
  if (!monitoring.empty()) j["monitoring"] = monitoring;
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    if (!f) {
      error = "cannot write ports file " + path + ": " + std::strerror(errno);
      return false;
    }
    f << j.dump();
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    error = "cannot write ports file " + path + ": " + ec.message();
    return false;
  }
  return true;
}

bool write_pid_file(const std::string& path, std::string& error) {
  std::ofstream f(path, std::ios::trunc);
  if (!f) {
    error = "Could not write pidfile: open " + path + ": " + std::strerror(errno);
    return false;
  }
  f << getpid();
  return true;
}

int send_signal_command(const std::string& spec, const std::string& exe_path, std::string& message) {
  const auto eq = spec.find('=');
  const std::string cmd = spec.substr(0, eq);
  const std::string target = eq == std::string::npos ? "" : spec.substr(eq + 1);
  int sig = 0;
  if (cmd == "stop") {
    sig = SIGKILL;
  } else if (cmd == "quit") {
    sig = SIGINT;
  } else if (cmd == "term") {
    sig = SIGTERM;
  } else if (cmd == "reopen") {
    sig = SIGUSR1;
  } else if (cmd == "reload") {
    sig = SIGHUP;
  } else if (cmd == "ldm") {
    sig = SIGUSR2;
  } else {
    message = "unknown signal \"" + cmd + "\"";
    return 1;
  }
  std::vector<pid_t> pids;
  if (!target.empty()) {
    std::string text = target;
    if (target.find_first_not_of("0123456789") != std::string::npos) {  // a pid file
      std::ifstream f(target);
      if (!f) {
        message = "could not read pid file " + target + ": " + std::strerror(errno);
        return 1;
      }
      std::getline(f, text);
    }
    try {
      pids.push_back(pid_t(std::stol(text)));
    } catch (...) {
      message = "invalid pid \"" + text + "\"";
      return 1;
    }
  } else {
    // Every other process started from an executable with our name.
    const std::string name = basename_of(exe_path);
    if (DIR* d = opendir("/proc")) {
      while (dirent* e = readdir(d)) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        const pid_t pid = pid_t(std::atol(e->d_name));
        if (pid == getpid()) continue;
        std::ifstream f(std::string("/proc/") + e->d_name + "/cmdline");
        std::string argv0;
        std::getline(f, argv0, '\0');
        if (!argv0.empty() && basename_of(argv0) == name) pids.push_back(pid);
      }
      closedir(d);
    }
    if (pids.empty()) {
      message = "no " + name + " processes running";
      return 1;
    }
    if (pids.size() > 1) {
      std::ostringstream os;
      os << "multiple " << name << " processes running:";
      for (pid_t p : pids) os << "\n" << p;
      message = os.str();
      return 1;
    }
  }
  if (::kill(pids[0], sig) != 0) {
    message = "signal " + cmd + " to " + std::to_string(pids[0]) + ": " + std::strerror(errno);
    return 1;
  }
  return 0;
}

}  // namespace core
