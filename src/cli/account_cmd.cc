// `peregrine account info` and `peregrine bench ...` (hands over to peregrine-bench).
#include <unistd.h>

#include <climits>
#include <filesystem>

#include "src/cli/commands.h"

namespace peregrine::cli {
namespace {

std::string limit(int64_t v, bool bytes) {
  if (v < 0) return "unlimited";
  return bytes ? ibytes(static_cast<uint64_t>(v)) : comma(v);
}

void account_info(cli_context& ctx, bool json) {
  client& cl = ctx.connect();
  ordered_json info = cl.js_api_raw("INFO", "");
  if (json) return print_json(info);
  char url[256] = {0}, server_id[128] = {0};
  natsConnection_GetConnectedUrl(cl.nc(), url, sizeof url);
  natsConnection_GetConnectedServerId(cl.nc(), server_id, sizeof server_id);
  uint64_t cid = 0;
  natsConnection_GetClientID(cl.nc(), &cid);
  int64_t rtt = 0;
  natsConnection_GetRTT(cl.nc(), &rtt);
  std::printf("Account Information\n\n");
  std::vector<info_line> l = {
                              {"Client ID", std::to_string(cid)},
                              {"RTT", go_duration(rtt)},
                              {"Headers Supported", "true"},
                              {"Maximum Payload", ibytes(static_cast<uint64_t>(natsConnection_GetMaxPayload(cl.nc())))},
                              {"Connected URL", url},
                              {"Connected Server ID", server_id}};
  if (info.contains("error")) {
    l.push_back({"", "JetStream Account Information:"});
    l.push_back({"JetStream", info["error"].value("description", std::string("not enabled"))});
    std::printf("%s", render_lines(l).c_str());
    return;
  }
  l.push_back({"", "JetStream Account Information:"});
  if (info.contains("domain")) l.push_back({"Domain", info.value("domain", std::string())});
  l.push_back({"", "Account Usage:"});
  if (!info.contains("domain")) l.erase(l.end() - 2);  // no JetStream title without lines under it
  l.push_back({"Storage", ibytes(info.value("storage", uint64_t{0}))});
  l.push_back({"Memory", ibytes(info.value("memory", uint64_t{0}))});
  l.push_back({"Streams", comma(info.value("streams", int64_t{0}))});
  l.push_back({"Consumers", comma(info.value("consumers", int64_t{0}))});
  const ordered_json lim = info.value("limits", ordered_json::object());
  l.push_back({"", "Account Limits:"});
  l.push_back({"Max Message Payload", ibytes(static_cast<uint64_t>(natsConnection_GetMaxPayload(cl.nc())))});
  l.push_back({"Max Streams", limit(lim.value("max_streams", int64_t{-1}), false)});
  l.push_back({"Max Consumers", limit(lim.value("max_consumers", int64_t{-1}), false)});
  l.push_back({"Max Storage", limit(lim.value("max_storage", int64_t{-1}), true)});
  l.push_back({"Max Memory", limit(lim.value("max_memory", int64_t{-1}), true)});
  const ordered_json api = info.value("api", ordered_json::object());
  l.push_back({"", "API Usage:"});
  l.push_back({"Total Requests", comma(api.value("total", int64_t{0}))});
  l.push_back({"Errors", comma(api.value("errors", int64_t{0}))});
  std::printf("%s", render_lines(l).c_str());
}

// peregrine-bench next to this binary (the build tree, an install's bin/), else on $PATH.
[[noreturn]] void exec_bench(const std::vector<std::string>& args) {
  std::string path = "peregrine-bench";
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const auto& candidate : {self.parent_path() / "peregrine-bench", self.parent_path() / "../../bench/e2e/peregrine-bench"})
      if (std::filesystem::exists(candidate, ec)) {
        path = candidate.string();
        break;
      }
  }
  std::vector<char*> argv{const_cast<char*>("peregrine-bench")};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  if (path.find('/') != std::string::npos) execv(path.c_str(), argv.data());
  else execvp(path.c_str(), argv.data());
  std::fprintf(stderr, "peregrine: error: cannot run peregrine-bench (%s): %s\n", path.c_str(), std::strerror(errno));
  std::exit(1);
}

}  // namespace

void add_account_commands(CLI::App& app, cli_context& ctx) {
  CLI::App* account = app.add_subcommand("account", "account information")->require_subcommand(1);
  auto json = std::make_shared<bool>(false);
  CLI::App* info = account->add_subcommand("info", "account and JetStream usage and limits");
  info->add_flag("--json", *json, "print the server's $JS.API.INFO reply");
  info->callback([&ctx, json] { account_info(ctx, *json); });

  CLI::App* bench = app.add_subcommand("bench", "benchmarks: runs peregrine-bench with the remaining arguments "
                                                "(see `peregrine bench --help`)");
  bench->prefix_command();
  bench->fallthrough(false);  // --help and the rest belong to peregrine-bench
  bench->set_help_flag();
  bench->callback([bench, &ctx] {
    std::vector<std::string> args = bench->remaining();
    if (!ctx.conn.server.empty()) {
      args.insert(args.begin(), ctx.conn.server);
      args.insert(args.begin(), "--url");
    }
    exec_bench(args);
  });
}

}  // namespace peregrine::cli
