// ccgym-shell-link: the link shell's link, as mahimahi's mm-link. It makes a TUN
// device outside, a new network namespace with a TUN device inside, and carries
// every IP packet between them through the relay core of ccgym-link (the
// simulator's LinkDirection on the wall clock): packets leaving the shell take the
// link's data direction, packets entering it the ACK direction. Bytes are counted
// as IP packet sizes against the link's 1500-byte delivery opportunities.
//
// It prints "ready pid=PID outside=ADDR inside=ADDR device=NAME" once both ends are
// up; programs join the namespace through /proc/PID/ns/net and reach the outside
// at ADDR (`ccgym shell` does this). On SIGINT/SIGTERM it kills every process left
// in its namespace, and its exit takes the devices and the namespace with it.
//
// --log FILE: one row per packet that left the link or was dropped by it:
// direction (0 leaving the shell, 1 entering it), flow (by 5-tuple, numbered as
// first seen; `# flow_N=tcp:IN:PORT>OUT:PORT` lines name them), seq (the flow's
// packet count in that direction), bytes, enter_ms (arrival at the link's queue),
// exit_ms (arrival at the far end, after the propagation delay; nan if dropped),
// dropped. Times are ms on the link's clock, which starts with the first packet.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>

#include "deploy/cpp/flags.hh"
#include "deploy/cpp/ip_flow.hh"
#include "deploy/cpp/net.hh"
#include "deploy/cpp/poller.hh"
#include "deploy/cpp/relay.hh"
#include "deploy/cpp/tsv_log.hh"
#include "deploy/cpp/tun.hh"
#include "emulators/cpp/simulator.hh"
#include "emulators/cpp/spec.hh"

namespace ccgym {
namespace {

// Both devices' MTU: one full packet is one 1500-byte delivery opportunity.
constexpr int kMtu = 1500;

struct SideStats {
  uint64_t too_long = 0;         // longer than the MTU: not carried
  uint64_t write_failures = 0;   // the kernel did not take it at the far end
  double late_sum_ms = 0;        // how late packets left after the link released them
  double late_max_ms = 0;
};

// The two ends of the shell: `outside` in the namespace the program started in,
// `inside` in the new namespace the program is now in.
struct Devices {
  std::unique_ptr<shell::Tun> outside;
  std::unique_ptr<shell::Tun> inside;
  uint32_t outside_address = 0;
  uint32_t inside_address = 0;
};

Devices make_devices() {
  Devices devices;
  devices.outside = std::make_unique<shell::Tun>("ccgym%d");
  shell::pick_addresses(static_cast<uint32_t>(::getpid()), &devices.outside_address,
                        &devices.inside_address);
  devices.outside->configure(devices.outside_address, devices.inside_address, kMtu);
  shell::enter_new_network_namespace();
  devices.inside = std::make_unique<shell::Tun>("ccgym%d");
  devices.inside->configure(devices.inside_address, devices.outside_address, kMtu);
  return devices;
}

// Carries packets between the devices through the relay, logging each one.
class ShellRelay {
 public:
  ShellRelay(std::unique_ptr<Relay> relay, const Devices* devices, net::TsvLog* log,
             const net::MsClock* clock)
      : relay_(std::move(relay)), devices_(devices), log_(log), clock_(clock) {
    relay_->observe_drops(
        [this](Relay::Side side, const Packet& packet) { log_row(side, packet, std::nan("")); });
  }

  void drain_leaving() { drain(*devices_->inside, Relay::kData); }
  void drain_entering() { drain(*devices_->outside, Relay::kAck); }

  // Forwards what the link released by now; returns when the link next acts.
  double turn(double) {
    relay_->advance(link_now_ms());
    log_arrivals(Relay::kData);
    forward(Relay::kData, *devices_->outside);
    log_arrivals(Relay::kAck);
    forward(Relay::kAck, *devices_->inside);
    return link_origin_ms_ == kNever ? kNever : relay_->next_event_ms() + link_origin_ms_;
  }

  // The log's trailer and the counts on stderr; false if the log is incomplete.
  bool summarize() const;

 private:
  // The link's time starts with the first packet, as ccgym-link's starts with the
  // first datagram: a trace's deliveries then line up with the traffic's start.
  double link_now_ms() const {
    return link_origin_ms_ == kNever ? 0.0 : clock_->now_ms() - link_origin_ms_;
  }

  void log_row(std::size_t side, const Packet& packet, double exit_ms) {
    if (!log_->is_open()) return;
    log_->integer(side).integer(packet.flow).integer(packet.seq).integer(packet.bytes);
    log_->ms(packet.sent_ms).ms(exit_ms).integer(std::isnan(exit_ms) ? 1 : 0);
    log_->end_row();
  }

  // Reads every packet waiting on `tun` into the relay's `side`.
  void drain(const shell::Tun& tun, Relay::Side side) {
    for (;;) {
      const uint32_t slot = relay_->acquire(side);
      const bool no_slot = slot == SlotPool::kNoSlot;
      unsigned char* buffer = no_slot ? scratch_ : relay_->slot(side, slot);
      const ssize_t n = tun.read(buffer, kMtu);
      if (n < 0) {
        if (!no_slot) relay_->release(side, slot);
        return;
      }
      if (no_slot) {
        relay_->reject_pool_full(side);
        continue;
      }
      if (n > kMtu || n == 0) {
        ++stats_[side].too_long;
        relay_->reject_malformed(side, slot);
        continue;
      }
      if (link_origin_ms_ == kNever) link_origin_ms_ = clock_->now_ms();
      offer(side, slot, static_cast<std::size_t>(n));
    }
  }

  void offer(Relay::Side side, uint32_t slot, std::size_t length) {
    bool is_new = false;
    const unsigned char* bytes = relay_->slot(side, slot);
    const shell::FlowKey key = shell::flow_key(bytes, length, side == Relay::kData);
    shell::FlowTable::Flow& flow = flows_.find(key, &is_new);
    if (is_new && log_->is_open()) {
      log_->comment("flow_" + std::to_string(flow.id) + "=" + key.to_string());
    }
    Packet packet;
    packet.flow = flow.id;
    packet.seq = flow.packets[side]++;
    packet.bytes = static_cast<uint32_t>(length);
    const double now_ms = link_now_ms();
    packet.sent_ms = now_ms;  // entered the link
    relay_->offer_packet(side, slot, length, packet, now_ms);
  }

  // Writes what came out of the relay's `side` to the far end's device.
  void forward(Relay::Side side, const shell::Tun& to) {
    relay_->deliver(side, [&](uint32_t, const unsigned char* bytes, std::size_t length,
                              double arrival_ms) {
      if (!to.write(bytes, length)) ++stats_[side].write_failures;
      const double late_ms = link_now_ms() - arrival_ms;
      stats_[side].late_sum_ms += late_ms;
      stats_[side].late_max_ms = std::max(stats_[side].late_max_ms, late_ms);
    });
  }

  // The log needs each packet, which deliver() hands over only as bytes: read the
  // arrivals before forwarding them.
  void log_arrivals(Relay::Side side) {
    if (!log_->is_open()) return;
    for (const LinkDirection::Arrival& arrival : relay_->direction(side).arrivals()) {
      log_row(side, arrival.packet, arrival.arrival_ms);
    }
  }

  std::unique_ptr<Relay> relay_;
  const Devices* devices_;
  net::TsvLog* log_;
  const net::MsClock* clock_;
  double link_origin_ms_ = kNever;
  shell::FlowTable flows_;
  SideStats stats_[2];
  unsigned char scratch_[kMtu + 1];
};

bool ShellRelay::summarize() const {
  const double origin_offset_ms = link_origin_ms_ == kNever ? 0.0 : link_origin_ms_;
  const long long origin_ns = clock_->origin_ns() + std::llround(origin_offset_ms * 1e6);
  if (log_->is_open()) {
    log_->comment("clock_origin_ns=" + std::to_string(origin_ns) + " outside=" +
                  shell::FlowKey::dotted(devices_->outside_address) + " inside=" +
                  shell::FlowKey::dotted(devices_->inside_address));
    if (!log_->close()) {
      std::fprintf(stderr, "ccgym-shell-link: could not write the whole log\n");
      return false;
    }
  }
  const char* names[2] = {"leaving", "entering"};
  for (std::size_t side : {Relay::kData, Relay::kAck}) {
    const Relay::Counters& c = relay_->counters(static_cast<Relay::Side>(side));
    std::fprintf(stderr,
                 "ccgym-shell-link: %s: %llu packets, %llu delivered, %llu dropped by the link, "
                 "%llu too long, %llu dropped for lack of buffer, %llu not taken by the kernel",
                 names[side], static_cast<unsigned long long>(c.offered),
                 static_cast<unsigned long long>(c.delivered),
                 static_cast<unsigned long long>(c.dropped),
                 static_cast<unsigned long long>(stats_[side].too_long),
                 static_cast<unsigned long long>(c.pool_full),
                 static_cast<unsigned long long>(stats_[side].write_failures));
    if (c.delivered > 0) {
      std::fprintf(stderr, "; forwarded late by %.3f ms on average, %.3f ms at most",
                   stats_[side].late_sum_ms / static_cast<double>(c.delivered),
                   stats_[side].late_max_ms);
    }
    std::fprintf(stderr, "\n");
  }
  return true;
}

int run(int argc, char** argv) {
  net::Flags flags(
      "ccgym-shell-link",
      "Carries the IP packets of a new network namespace through an emulated link in real time.",
      {{"link", "SPEC", "link spec, e.g. rate_mbps=12,delay_ms=20 (data: leaving the shell)", "",
        true},
       {"log", "FILE", "write the per-packet log here", ""},
       {"seed", "N", "seed of the link's randomness (loss, Poisson delivery, RED)", "1"}});
  flags.parse(argc, argv);
  const uint64_t seed = flags.integer("seed");
  std::unique_ptr<Relay> relay;
  try {
    const LinkSpec spec = parse_link_spec(flags.text("link"));
    refuse_simulated_receivers(spec);
    relay = std::make_unique<Relay>(
        make_direction(spec.data, spec.delay_ms, spec.once, derive_seed(seed, kDataDirectionPart)),
        make_direction(spec.ack, spec.delay_ms, spec.once, derive_seed(seed, kAckDirectionPart)),
        Relay::kDefaultMaxSlots, std::array<uint32_t, 2>{kMtu, kMtu});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ccgym-shell-link: --link: %s\n", e.what());
    return net::kExitUsage;
  }
  net::TsvLog log;
  if (flags.given("log") && !flags.text("log").empty()) {
    log.open(flags.text("log"), "direction\tflow\tseq\tbytes\tenter_ms\texit_ms\tdropped");
  }

  // Signals first: a stop requested while the devices are being made is honoured.
  net::StopSignals signals;
  const uint64_t outer_namespace = shell::network_namespace_id();
  Devices devices;
  try {
    devices = make_devices();
  } catch (const shell::NotPermitted& e) {
    std::fprintf(stderr, "ccgym-shell-link: %s\n", e.what());
    return net::kExitUsage;
  }
  const uint64_t own_namespace = shell::network_namespace_id();
  net::tighten_timer_slack();
  std::printf("ready pid=%d outside=%s inside=%s device=%s\n", static_cast<int>(::getpid()),
              shell::FlowKey::dotted(devices.outside_address).c_str(),
              shell::FlowKey::dotted(devices.inside_address).c_str(),
              devices.outside->name().c_str());
  std::fflush(stdout);

  net::MsClock clock;
  ShellRelay shell_relay(std::move(relay), &devices, &log, &clock);
  net::Poller poller;
  poller.on_readable(devices.inside->fd(), [&] { shell_relay.drain_leaving(); });
  poller.on_readable(devices.outside->fd(), [&] { shell_relay.drain_entering(); });
  poller.run(clock, signals, kNever, [&](double now_ms) { return shell_relay.turn(now_ms); });

  // What was started in the shell ends with it (never anything outside it).
  if (own_namespace != outer_namespace) shell::kill_processes_in_namespace(own_namespace);
  return shell_relay.summarize() ? 0 : 1;
}

}  // namespace
}  // namespace ccgym

int main(int argc, char** argv) {
  return ccgym::net::run_program("ccgym-shell-link", ccgym::run, argc, argv);
}
