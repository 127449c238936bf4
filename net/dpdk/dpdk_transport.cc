#include "net/dpdk/dpdk_transport.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sched.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <mutex>
#include <random>
#include <sstream>
#include <vector>

#include "net/dpdk/steer.h"
#include "src/base/log.h"
#include "src/base/spsc_ring.h"

namespace net {
namespace {
constexpr std::uint16_t kBurst = 32;
constexpr std::uint16_t kRingSize = 512;
constexpr unsigned kMbufs = 4095;  // >= rx ring + tx ring + bursts in flight (platform notes 2.4)
constexpr unsigned kTxOnlyMbufs = 2047;  // a shard without an rx queue: tx ring + bursts only
constexpr std::size_t kSteerRing = 1024;  // mbufs in flight from one queue owner to one shard
constexpr base::nanos kMinBackoff = 50 * base::kMicro, kMaxBackoff = base::kMilli;
std::atomic<bool> g_eal_started{false};
constexpr std::uint64_t kTxCsum = RTE_ETH_TX_OFFLOAD_IPV4_CKSUM | RTE_ETH_TX_OFFLOAD_TCP_CKSUM;

base::nanos now_ns() { return base::system_clock::instance().monotonic_ns(); }
}  // namespace

struct dpdk_transport::port_state {
  std::uint16_t port = 0;
  std::uint32_t shard = 0;
  int rxq = -1;            // the rx queue this shard owns; -1: it gets frames by steering only
  std::uint16_t txq = 0;
  std::mutex* tx_lock = nullptr;  // set when shards share the tx queue
  rte_mempool* pool = nullptr;
  int intr_fd = -1;  // this rx queue's interrupt fd, -1 when the PMD has none
  bool tx_csum = false;  // the port fills IPv4/TCP checksums of frames we mark
  std::vector<bool> wake;  // shards this burst steered frames to
  std::uint64_t steered_out = 0, steered_in = 0, steer_drops = 0;
  rte_mbuf* rx[kBurst] = {};
  rte_mbuf* tx[kBurst] = {};
  std::uint16_t ntx = 0;
  rte_mbuf* building = nullptr;  // the frame between alloc_frame and commit_frame
  std::string scratch;           // linearises the rare multi-segment frame
};

// Where one shard receives steered frames: a ring from each queue owner (none from its own
// queue), and an eventfd the owners ring when the shard sleeps.
struct steer_inbox {
  std::vector<std::unique_ptr<base::spsc_ring<rte_mbuf*>>> from;  // indexed by rx queue
  int efd = -1;
  std::atomic<bool> sleeping{false};
  bool any() const {
    for (auto& r : from)
      if (r) return true;
    return false;
  }
  bool pending() const {
    for (auto& r : from)
      if (r && !r->empty()) return true;
    return false;
  }
};

// Listening is set up once (on shard 0's transport, before the shard threads start) and
// applies to every shard; the last transport to go stops the port.
struct dpdk_transport::port_group {
  std::uint16_t port = 0;
  std::uint32_t shards = 1;
  std::uint16_t queues = 1;
  bool steering = false;  // fewer queues than shards
  std::vector<tcp::ip_stack*> stacks;
  int listen_port = 0;
  std::vector<std::unique_ptr<steer_inbox>> inboxes;  // indexed by shard
  std::vector<std::unique_ptr<std::mutex>> tx_locks;  // indexed by tx queue
  ~port_group() {
    rte_eth_dev_stop(port);
    for (auto& in : inboxes) {
      for (auto& r : in->from)
        if (r) r->drain([](rte_mbuf* m) { rte_pktmbuf_free(m); });
      if (in->efd >= 0) ::close(in->efd);
    }
    rte_eth_dev_close(port);  // the EAL stays up: it cannot be initialised again in this process
  }
};

bool dpdk_available() { return true; }

namespace {
// Configures and starts the port with `nq` queue pairs; rx interrupts and RSS are tried
// first and dropped when the PMD refuses them (af_packet has no rx interrupts).
bool start_port(std::uint16_t port, std::uint16_t nq, const std::vector<rte_mempool*>& pools, bool& intr,
                std::string& error) {
  rte_eth_dev_info info{};
  rte_eth_dev_info_get(port, &info);
  rte_eth_conf conf{};
  if (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_IPV4_CKSUM) conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_IPV4_CKSUM;
  if (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_TCP_CKSUM) conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_TCP_CKSUM;
  if ((info.tx_offload_capa & kTxCsum) == kTxCsum) conf.txmode.offloads |= kTxCsum;
  const std::uint64_t rss = (RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP) & info.flow_type_rss_offloads;
  for (int attempt = 0; attempt < 4; ++attempt) {
    const bool try_intr = (attempt & 1) == 0, try_rss = nq > 1 && rss != 0 && attempt < 2;
    conf.intr_conf.rxq = try_intr ? 1 : 0;
    conf.rxmode.mq_mode = try_rss ? RTE_ETH_MQ_RX_RSS : RTE_ETH_MQ_RX_NONE;
    conf.rx_adv_conf.rss_conf.rss_hf = try_rss ? rss : 0;
    std::uint16_t nrx = kRingSize, ntx = kRingSize;
    if (rte_eth_dev_configure(port, nq, nq, &conf) != 0) continue;
    rte_eth_dev_adjust_nb_rx_tx_desc(port, &nrx, &ntx);
    bool ok = true;
    for (std::uint16_t q = 0; q < nq && ok; ++q)
      ok = rte_eth_rx_queue_setup(port, q, nrx, rte_eth_dev_socket_id(port), nullptr, pools[q]) == 0 &&
           rte_eth_tx_queue_setup(port, q, ntx, rte_eth_dev_socket_id(port), nullptr) == 0;
    if (!ok || rte_eth_dev_start(port) != 0) continue;
    intr = try_intr;
    return true;
  }
  error = "DPDK transport: port " + std::to_string(port) + " failed to configure/start with " +
          std::to_string(nq) + " queue pair(s)";
  return false;
}
}  // namespace

std::vector<std::unique_ptr<transport>> make_dpdk_transports(const dpdk_options& o, int shards, std::string& error) {
  tcp::stack_config cfg;
  if (!tcp::parse_ipv4_addr(o.ip, cfg.ip)) {
    error = "DPDK transport: a valid IPv4 address is required (--dpdk_ip), got '" + o.ip + "'";
    return {};
  }
  if (!tcp::parse_ipv4_addr(o.netmask, cfg.netmask)) {
    error = "DPDK transport: bad netmask '" + o.netmask + "'";
    return {};
  }
  if (!o.gateway.empty() && !tcp::parse_ipv4_addr(o.gateway, cfg.gateway)) {
    error = "DPDK transport: bad gateway '" + o.gateway + "'";
    return {};
  }
  // One EAL per process: it cannot be initialised twice, even after cleanup.
  if (g_eal_started.exchange(true)) {
    error = "DPDK transport: the EAL is already initialised in this process (one DPDK port only)";
    return {};
  }
  std::vector<std::string> args{"peregrine-server"};
  std::istringstream in(o.eal_args);
  for (std::string a; in >> a;) args.push_back(a);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // rte_eal_init pins the calling thread to the main lcore and every thread created later
  // would inherit that; keep the caller's affinity instead (shard threads pin themselves).
  cpu_set_t before;
  CPU_ZERO(&before);
  sched_getaffinity(0, sizeof before, &before);
  const int n = rte_eal_init(int(args.size()), argv.data());
  sched_setaffinity(0, sizeof before, &before);
  if (n < 0) {
    error = std::string("DPDK EAL init failed: ") + rte_strerror(rte_errno);
    return {};
  }
  const std::uint16_t port = std::uint16_t(o.port);
  if (o.port < 0 || !rte_eth_dev_is_valid_port(port)) {
    error = "DPDK transport: no port " + std::to_string(o.port) + " (" +
            std::to_string(rte_eth_dev_count_avail()) + " available; check --vdev / the PCI binding)";
    return {};
  }
  rte_eth_dev_info info{};
  rte_eth_dev_info_get(port, &info);
  shards = std::max(1, shards);
  // --dpdk_queues may ask for fewer queue pairs than shards (software steering on a
  // multi-queue port, e.g. to test it on net_tap).
  const int want = o.queues > 0 ? std::min(shards, o.queues) : shards;
  const std::uint16_t nq = std::uint16_t(std::max(1, std::min({want, int(info.max_rx_queues), int(info.max_tx_queues)})));
  const bool steering = nq < shards;
  if (nq < want)
    PG_WARN("DPDK port {} ({}) has {} queue pair(s) for {} shard(s): steering connections in software", o.port,
            info.driver_name, nq, shards);
  const int socket = rte_eth_dev_socket_id(port);
  // One pool per shard: allocation never crosses shards. A queue owner's pool also covers
  // the mbufs it has steered to the others and they have not freed yet.
  std::vector<rte_mempool*> pools;
  for (int s = 0; s < shards; ++s) {
    const unsigned n = s >= nq ? kTxOnlyMbufs : kMbufs + unsigned(steering ? kSteerRing * std::size_t(shards - 1) : 0);
    pools.push_back(rte_pktmbuf_pool_create(("pg_mbufs_" + std::to_string(s)).c_str(), n, 256, 0,
                                            RTE_MBUF_DEFAULT_BUF_SIZE, socket < 0 ? int(SOCKET_ID_ANY) : socket));
    if (pools.back() == nullptr) {
      error = std::string("DPDK transport: mbuf pool: ") + rte_strerror(rte_errno);
      return {};
    }
  }
  bool intr = false;
  if (!start_port(port, nq, pools, intr, error)) return {};
  rte_ether_addr mac{};
  rte_eth_macaddr_get(port, &mac);
  std::copy(std::begin(mac.addr_bytes), std::end(mac.addr_bytes), cfg.mac.begin());
  auto group = std::make_shared<dpdk_transport::port_group>();
  group->port = port;
  group->shards = std::uint32_t(shards);
  group->queues = nq;
  group->steering = steering;
  if (steering) {
    for (int s = 0; s < shards; ++s) {
      auto in = std::make_unique<steer_inbox>();
      in->from.resize(nq);
      for (int q = 0; q < nq; ++q)
        if (q != s) in->from[q] = std::make_unique<base::spsc_ring<rte_mbuf*>>(kSteerRing);
      in->efd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
      if (in->efd < 0) {
        error = "DPDK transport: eventfd failed";
        return {};
      }
      group->inboxes.push_back(std::move(in));
    }
    for (int q = 0; q < nq; ++q) group->tx_locks.push_back(std::make_unique<std::mutex>());
  }
  std::vector<std::unique_ptr<transport>> out;
  int with_intr = 0;
  // PEREGRINE_DPDK_SW_CSUM=1 keeps checksums in software (to compare, or for a PMD that lies).
  const bool tx_csum = (info.tx_offload_capa & kTxCsum) == kTxCsum && std::getenv("PEREGRINE_DPDK_SW_CSUM") == nullptr;
  for (int s = 0; s < shards; ++s) {
    auto ps = std::make_unique<dpdk_transport::port_state>();
    ps->port = port;
    ps->shard = std::uint32_t(s);
    ps->rxq = s < nq ? s : -1;
    ps->txq = std::uint16_t(s % nq);
    if (steering) ps->tx_lock = group->tx_locks[ps->txq].get();
    ps->pool = pools[std::size_t(s)];
    if (intr && s < nq) ps->intr_fd = rte_eth_dev_rx_intr_ctl_q_get_fd(port, std::uint16_t(s));
    ps->tx_csum = tx_csum;
    ps->wake.assign(std::size_t(shards), false);
    with_intr += ps->intr_fd >= 0;
    cfg.isn_source = [] {
      std::uint32_t v = 0;
      while (::getrandom(&v, sizeof v, 0) != ssize_t(sizeof v)) {
      }
      return v;
    };
    out.push_back(std::make_unique<dpdk_transport>(std::move(ps), group, cfg));
  }
  PG_INFO("DPDK port {} ({}) up: {} mask {} gw {}, {} queue pair(s) for {} shard(s){}, rx interrupts {}, tx checksums {}",
          o.port, info.driver_name, o.ip, o.netmask, o.gateway.empty() ? "none" : o.gateway, nq, shards,
          steering ? " (software steering)" : "", with_intr == nq ? "yes" : "no (sleep backoff)",
          tx_csum ? "offloaded" : "software");
  return out;
}

dpdk_transport::dpdk_transport(std::unique_ptr<port_state> port, std::shared_ptr<port_group> group,
                               const tcp::stack_config& cfg)
    : _port(std::move(port)), _group(std::move(group)), _stack(cfg, *this) {
  _stack.set_handler(this);
  _group->stacks.push_back(&_stack);
}

dpdk_transport::~dpdk_transport() {
  tx_flush();
  std::erase(_group->stacks, &_stack);
  if (_group->steering)
    PG_INFO("DPDK shard {}: {} connection(s) accepted, {} frame(s) steered in, {} steered out, {} dropped on a full ring",
            _port->shard, _stack.stats().accepted, _port->steered_in, _port->steered_out, _port->steer_drops);
}

base::status dpdk_transport::listen(const std::string&, int port) {
  if (port == 0) port = 20000 + int(std::random_device{}() % 40000);
  _group->listen_port = port;
  for (tcp::ip_stack* s : _group->stacks) s->listen(std::uint16_t(port));
  return {};
}

int dpdk_transport::bound_port() const { return _group->listen_port; }

void dpdk_transport::stop_listening() {
  // Only this shard's stack: each shard's thread stops its own (the group's other stacks
  // belong to threads that may still be running).
  _stack.stop_listening();
}

void dpdk_transport::shutdown() {
  _handler = nullptr;
  _stack.abort_all();
  tx_flush();  // the RSTs leave before the port is closed
}

void dpdk_transport::adopt(int fd) { ::close(fd); }  // kernel sockets never reach this transport

std::string& dpdk_transport::outbuf(conn_handle h) {
  std::string* b = _stack.send_buffer(h);
  if (b == nullptr) {
    static thread_local std::string sink;
    sink.clear();
    return sink;
  }
  _dirty.insert(h);
  return *b;
}

void dpdk_transport::flush_now(conn_handle h) {
  _stack.push(h, now_ns());
  tx_flush();
}

std::size_t dpdk_transport::flush() {
  std::size_t n = 0;
  if (!_dirty.empty()) {
    const base::nanos now = now_ns();
    auto dirty = std::move(_dirty);
    _dirty.clear();
    for (conn_handle h : dirty) {
      _stack.push(h, now);
      ++n;
    }
  }
  tx_flush();
  return n;
}

std::uint8_t* dpdk_transport::alloc_frame(std::size_t len) {
  rte_mbuf* m = rte_pktmbuf_alloc(_port->pool);
  if (m == nullptr) return nullptr;
  char* p = len <= 0xffff ? rte_pktmbuf_append(m, std::uint16_t(len)) : nullptr;
  if (p == nullptr) {
    rte_pktmbuf_free(m);
    return nullptr;
  }
  _port->building = m;
  return reinterpret_cast<std::uint8_t*>(p);
}

bool dpdk_transport::tx_checksum_offload() const { return _port->tx_csum; }

void dpdk_transport::commit_tcp_offload_frame() {
  rte_mbuf* m = _port->building;
  m->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM | RTE_MBUF_F_TX_TCP_CKSUM;
  m->l2_len = tcp::kEtherHdr;
  m->l3_len = tcp::kIpv4Hdr;
  commit_frame();
}

void dpdk_transport::commit_frame() {
  _port->tx[_port->ntx++] = _port->building;
  _port->building = nullptr;
  if (_port->ntx == kBurst) tx_flush();
}

void dpdk_transport::tx_flush() {
  auto& p = *_port;
  if (p.ntx == 0) return;
  std::uint16_t done = 0;
  {
    // A tx queue shared by shards (software steering): PMDs' tx_burst is not thread-safe.
    std::unique_lock<std::mutex> hold;
    if (p.tx_lock != nullptr) hold = std::unique_lock<std::mutex>(*p.tx_lock);
    for (int tries = 0; done < p.ntx && tries < 8; ++tries)
      done = std::uint16_t(done + rte_eth_tx_burst(p.port, p.txq, p.tx + done, std::uint16_t(p.ntx - done)));
  }
  for (std::uint16_t i = done; i < p.ntx; ++i) rte_pktmbuf_free(p.tx[i]);  // TCP retransmits
  p.ntx = 0;
}

void dpdk_transport::deliver(rte_mbuf* m, base::nanos now) {
  auto& p = *_port;
  // The port's checksum verdicts (offloads start_port enabled): bad drops, good skips the
  // software check, unknown checks in software.
  const std::uint64_t ip_ck = m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_MASK;
  const std::uint64_t l4_ck = m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK;
  if (ip_ck == RTE_MBUF_F_RX_IP_CKSUM_BAD || l4_ck == RTE_MBUF_F_RX_L4_CKSUM_BAD) {
    rte_pktmbuf_free(m);
    return;
  }
  const bool ip_ok = ip_ck == RTE_MBUF_F_RX_IP_CKSUM_GOOD, l4_ok = l4_ck == RTE_MBUF_F_RX_L4_CKSUM_GOOD;
  if (m->nb_segs == 1) {  // the common case: the payload goes to the parser from the mbuf
    _stack.input(tcp::bytes(rte_pktmbuf_mtod(m, const std::uint8_t*), m->data_len), now, ip_ok, l4_ok);
  } else {
    p.scratch.resize(m->pkt_len);
    rte_pktmbuf_read(m, 0, m->pkt_len, p.scratch.data());
    _stack.input(tcp::bytes(reinterpret_cast<const std::uint8_t*>(p.scratch.data()), p.scratch.size()), now, ip_ok,
                 l4_ok);
  }
  rte_pktmbuf_free(m);
}

void dpdk_transport::steer_to(std::uint32_t to, rte_mbuf* m) {
  auto& ring = *_group->inboxes[to]->from[std::size_t(_port->rxq)];
  if (!ring.try_push(m)) {  // the shard is behind: drop, TCP retransmits
    rte_pktmbuf_free(m);
    ++_port->steer_drops;
    return;
  }
  ++_port->steered_out;
  _port->wake[to] = true;
}

// Rings the eventfd of each shard this burst fed that is asleep. The fence pairs with the
// one in wait(): either the sleeper sees the frames in its ring or we see it sleeping.
void dpdk_transport::wake_steered() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (std::size_t s = 0; s < _port->wake.size(); ++s) {
    if (!_port->wake[s]) continue;
    _port->wake[s] = false;
    steer_inbox& in = *_group->inboxes[s];
    if (in.sleeping.load(std::memory_order_seq_cst)) {
      const std::uint64_t one = 1;
      [[maybe_unused]] auto r = ::write(in.efd, &one, sizeof one);
    }
  }
}

std::size_t dpdk_transport::drain_steered(base::nanos now) {
  std::size_t n = 0;
  for (auto& r : _group->inboxes[_port->shard]->from)
    if (r) n += r->drain([&](rte_mbuf* m) { deliver(m, now); }, 4 * kBurst);
  _port->steered_in += n;
  return n;
}

std::size_t dpdk_transport::receive(base::nanos now) {
  auto& p = *_port;
  std::size_t frames = 0;
  const bool steering = _group->steering;
  if (steering) frames += drain_steered(now);
  if (p.rxq < 0) return frames;
  const std::uint32_t shards = _group->shards;
  bool steered = false;
  for (int round = 0; round < 4; ++round) {  // bounded so timers and flushes keep running
    const std::uint16_t n = rte_eth_rx_burst(p.port, std::uint16_t(p.rxq), p.rx, kBurst);
    for (std::uint16_t i = 0; i < n; ++i) {
      rte_mbuf* m = p.rx[i];
      if (!steering) {
        deliver(m, now);
        continue;
      }
      const auto d = dpdk::steer_frame(tcp::bytes(rte_pktmbuf_mtod(m, const std::uint8_t*), m->data_len), shards);
      if (d.kind == dpdk::steer_kind::connection && d.shard != p.shard) {
        steer_to(d.shard, m);
        steered = true;
        continue;
      }
      if (d.kind == dpdk::steer_kind::every_shard) {  // an ARP reply: each shard's cache learns
        for (std::uint32_t s = 0; s < shards; ++s) {
          if (s == p.shard) continue;
          rte_mbuf_refcnt_update(m, 1);
          steer_to(s, m);
        }
        steered = true;
      }
      deliver(m, now);
    }
    frames += n;
    if (n < kBurst) break;
  }
  if (steered) wake_steered();
  return frames;
}

std::size_t dpdk_transport::poll(base::nanos now) {
  if (!_registered) {
    // Gives the shard thread an lcore id so mempool caches work; failure only costs speed.
    _registered = true;
    if (rte_lcore_id() == LCORE_ID_ANY) rte_thread_register();
  }
  std::size_t work = receive(now);
  work += _stack.poll(now);
  tx_flush();
  if (work) _backoff = 0;
  return work;
}

void dpdk_transport::wait(base::nanos timeout, int doorbell_fd) {
  auto& p = *_port;
  const base::nanos now = now_ns();
  if (const base::nanos t = _stack.next_timer(); t != 0) timeout = std::min(timeout, std::max<base::nanos>(t - now, 0));
  pollfd fds[3] = {{doorbell_fd, POLLIN, 0}, {-1, POLLIN, 0}, {-1, POLLIN, 0}};
  nfds_t nfds = 1;
  steer_inbox* in = _group->steering ? _group->inboxes[p.shard].get() : nullptr;
  if (in != nullptr && in->any()) {
    // Announce the sleep, then look once more: an owner that pushed before it could see the
    // flag left its frames in the ring (the fence pairs with wake_steered's).
    in->sleeping.store(true, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (in->pending()) {
      in->sleeping.store(false, std::memory_order_relaxed);
      return;
    }
    fds[nfds++] = {in->efd, POLLIN, 0};
  } else {
    in = nullptr;
  }
  const bool intr = p.intr_fd >= 0;
  if (intr) {
    rte_eth_dev_rx_intr_enable(p.port, std::uint16_t(p.rxq));
    // A frame may have arrived between the last poll and arming: look once more.
    if (rte_eth_rx_queue_count(p.port, std::uint16_t(p.rxq)) > 0) {
      rte_eth_dev_rx_intr_disable(p.port, std::uint16_t(p.rxq));
      if (in != nullptr) in->sleeping.store(false, std::memory_order_relaxed);
      return;
    }
    fds[nfds++] = {p.intr_fd, POLLIN, 0};
  } else if (p.rxq >= 0) {
    // An rx queue without interrupts (net_af_packet): sleep in growing steps. A shard
    // without a queue needs none: its eventfd says when frames were steered to it.
    _backoff = _backoff == 0 ? kMinBackoff : std::min(_backoff * 2, kMaxBackoff);
    timeout = std::min(timeout, _backoff);
  }
  timespec ts{timeout / base::kSecond, timeout % base::kSecond};
  ::ppoll(fds, nfds, &ts, nullptr);
  if (intr) rte_eth_dev_rx_intr_disable(p.port, std::uint16_t(p.rxq));
  if (in != nullptr) {
    in->sleeping.store(false, std::memory_order_relaxed);
    std::uint64_t v;
    [[maybe_unused]] auto r = ::read(in->efd, &v, sizeof v);
  }
}

void dpdk_transport::on_open(std::uint64_t id, std::uint32_t peer_ip, std::uint16_t peer_port) {
  if (_handler) _handler->on_open(id, tcp::ipv4_to_string(peer_ip), peer_port);
}

void dpdk_transport::on_data(std::uint64_t id, std::string_view bytes) {
  if (_handler) _handler->on_data(id, bytes);
}

void dpdk_transport::on_close(std::uint64_t id) {
  if (_handler) _handler->on_close(id);
}

}  // namespace net
