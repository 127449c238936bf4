#include "src/core/sys_js_relay.h"

#include <charconv>
#include <map>
#include <string>

#include "src/base/clock.h"
#include "src/core/account.h"
#include "src/core/dispatcher.h"
#include "src/core/server.h"

namespace core {

namespace {

// How long a request waits for JetStream's answer (the meta leader's, two hops away at
// most); later answers are dropped.
constexpr base::nanos kAnswerWindow = 10 * base::kSecond;
constexpr std::size_t kMaxPending = 1024;  // a flood: what does not fit is not answered

class sys_js_relay final : public service {
 public:
  sys_js_relay(server& srv, std::uint32_t account, std::uint32_t js_account)
      : _srv(srv), _sys(account), _js(js_account) {}

  bool start(service_host& host, std::string& error) override {
    (void)error;
    if (host.replication() == nullptr) return true;  // standalone: nats-server answers nothing
    _d = _srv.shards()[0];
    _clk = &host.clk();
    _name = host.server_name();
    for (const char* s : {"$JS.API.META.LEADER.STEPDOWN", "$JS.API.SERVER.REMOVE"})
      _d->subscribe_in(_sys, s, {}, &_requests);
    _reply_prefix = "$PG.SYSR." + _name + ".";
    _d->subscribe_in(_js, _reply_prefix + "*", {}, &_answers, true);
    return true;
  }
  void stop() override {}

 private:
  struct pending {
    std::string reply;
    base::nanos deadline = 0;
  };
  struct requests final : internal_handler {
    sys_js_relay& r;
    explicit requests(sys_js_relay& x) : r(x) {}
    void on_msg(const inbound_msg& m) override { r.on_request(m); }
  };
  struct answers final : internal_handler {
    sys_js_relay& r;
    explicit answers(sys_js_relay& x) : r(x) {}
    void on_msg(const inbound_msg& m) override { r.on_answer(m); }
  };

  void on_request(const inbound_msg& m) {
    if (m.reply.empty()) return;
    const base::nanos now = _clk->monotonic_ns();
    std::erase_if(_pending, [&](const auto& kv) { return kv.second.deadline <= now; });
    if (_pending.size() >= kMaxPending) return;
    const std::uint64_t id = ++_next;
    _pending[id] = pending{std::string(m.reply), now + kAnswerWindow};
    const std::string_view rest = m.subject.substr(8);  // after "$JS.API."
    const std::string subject = "$PG.JSC." + _name + ".0.SYS." + std::string(rest);
    _d->publish_in(_js, subject, _reply_prefix + std::to_string(id), m.headers, m.payload);
  }

  void on_answer(const inbound_msg& m) {
    const std::string_view tail = m.subject.substr(_reply_prefix.size());
    std::uint64_t id = 0;
    auto [p, ec] = std::from_chars(tail.data(), tail.data() + tail.size(), id);
    if (ec != std::errc() || p != tail.data() + tail.size()) return;
    auto it = _pending.find(id);
    if (it == _pending.end()) return;
    const std::string reply = std::move(it->second.reply);
    _pending.erase(it);
    _d->publish_in(_sys, reply, {}, m.headers, m.payload);
  }

  server& _srv;
  std::uint32_t _sys;
  std::uint32_t _js;  // the account whose JetStream takes the cluster's operator requests
  dispatcher* _d = nullptr;
  const base::clock* _clk = nullptr;
  std::string _name, _reply_prefix;
  std::map<std::uint64_t, pending> _pending;
  std::uint64_t _next = 0;
  requests _requests{*this};
  answers _answers{*this};
};

}  // namespace

std::unique_ptr<service> make_sys_js_relay(server& srv, std::uint32_t system_account, std::uint32_t js_account) {
  if (system_account == kGlobalAccount) return nullptr;
  return std::make_unique<sys_js_relay>(srv, system_account, js_account);
}

}  // namespace core
