// ccgym-link: the real-time link relay. Datagrams the sender sends to --listen go
// through the data direction of --link and on to the receiver (--to) from a
// second socket; the receiver's ACKs come back through the ACK direction and go
// to the sender of their flow, from the --listen socket, so the sender hears its
// ACKs from the address it sends to. Both directions are the same LinkDirection
// the simulator uses, run on the wall clock from the first data datagram on.
//
// Malformed datagrams (not ccgym data on --listen, not ccgym ACKs from the
// receiver) are counted and dropped. The counts go to stderr at exit.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "deploy/cpp/flags.hh"
#include "deploy/cpp/net.hh"
#include "deploy/cpp/poller.hh"
#include "deploy/cpp/relay.hh"
#include "deploy/cpp/wire.hh"
#include "emulators/cpp/simulator.hh"
#include "emulators/cpp/spec.hh"

namespace ccgym {
namespace {

constexpr int kSocketBufferBytes = 8 << 20;
// Flows whose ACKs can be routed; the table is searched linearly per ACK.
constexpr std::size_t kExpectedFlows = 64;

struct SideStats {
  uint64_t forward_failures = 0;  // the kernel refused to send it on
  uint64_t unroutable = 0;        // ACK of a flow whose sender is unknown
  uint64_t foreign = 0;           // arrived on the receiver's socket from elsewhere
  // How late datagrams left the relay after the link released them (relay clock,
  // ms): the emulation's fidelity, limited by wake-up latency.
  double late_sum_ms = 0;
  double late_max_ms = 0;
  void forwarded_late(double late_ms) {
    late_sum_ms += late_ms;
    late_max_ms = std::max(late_max_ms, late_ms);
  }
};

void print_counters(const char* name, const Relay::Counters& c, const SideStats& s) {
  std::fprintf(stderr,
               "ccgym-link: %s: %llu offered, %llu delivered, %llu dropped by the link, "
               "%llu malformed datagrams, %llu dropped for lack of buffer, %llu not forwarded, "
               "%llu unroutable, %llu from unexpected sources\n",
               name, static_cast<unsigned long long>(c.offered),
               static_cast<unsigned long long>(c.delivered),
               static_cast<unsigned long long>(c.dropped),
               static_cast<unsigned long long>(c.malformed),
               static_cast<unsigned long long>(c.pool_full),
               static_cast<unsigned long long>(s.forward_failures),
               static_cast<unsigned long long>(s.unroutable),
               static_cast<unsigned long long>(s.foreign));
  if (c.delivered > 0) {
    std::fprintf(stderr, "ccgym-link: %s: forwarded late by %.3f ms on average, %.3f ms at most\n",
                 name, s.late_sum_ms / static_cast<double>(c.delivered), s.late_max_ms);
  }
}

struct Options {
  net::Address to;               // the receiver
  net::Address listen_address;   // where senders send
  net::Address forward_address;  // the socket that talks to the receiver
  std::string link;
  double stop_ms = kNever;  // relay clock
  uint64_t seed = 1;
};

Options parse_options(int argc, char** argv) {
  net::Flags flags(
      "ccgym-link",
      "Relays ccgym datagrams through an emulated link in real time.",
      {{"listen", "PORT", "UDP port the sender sends to; 0 picks a free one", "", true},
       {"to", "HOST:PORT", "the receiver", "", true},
       {"link", "SPEC", "link spec, e.g. rate_mbps=12,delay_ms=20", "", true},
       {"bind", "ADDR", "address of both relay sockets", "127.0.0.1"},
       {"duration-s", "SECONDS", "stop after this long; 0 runs until SIGINT/SIGTERM", "0"},
       {"seed", "N", "seed of the link's randomness (loss, Poisson delivery, RED)", "1"}});
  flags.parse(argc, argv);
  Options options;
  const uint64_t port = flags.integer("listen");
  if (port > 65535) flags.fail("--listen must be at most 65535");
  const double duration_s = flags.number("duration-s");
  if (duration_s < 0) flags.fail("--duration-s must be >= 0");
  if (duration_s > 0) options.stop_ms = duration_s * 1000;
  options.seed = flags.integer("seed");
  options.link = flags.text("link");
  try {
    options.to = net::Address::parse(flags.text("to"));
    options.listen_address =
        net::Address::resolve(flags.text("bind"), static_cast<uint16_t>(port));
    options.forward_address = net::Address::resolve(flags.text("bind"), 0);
  } catch (const std::invalid_argument& e) {
    flags.fail(e.what());
  }
  return options;
}

// The relay between two sockets: datagrams from senders on `listen` go through the
// data direction to the receiver from `forward`; ACKs from the receiver come back
// through the ACK direction to the sender of their flow.
class UdpRelay {
 public:
  UdpRelay(std::unique_ptr<Relay> relay, const net::Address& to, net::UdpSocket* listen,
           net::UdpSocket* forward, const net::MsClock* clock)
      : relay_(std::move(relay)), to_(to), listen_(listen), forward_(forward), clock_(clock) {
    senders_.reserve(kExpectedFlows);
  }

  void drain_data() { drain(*listen_, Relay::kData, data_stats_); }
  void drain_acks() { drain(*forward_, Relay::kAck, ack_stats_); }

  // Forwards what the link released by now; returns when the link next acts.
  double turn(double) {
    relay_->advance(link_now_ms());
    relay_->deliver(Relay::kData, [&](uint32_t, const unsigned char* bytes, std::size_t length,
                                      double arrival_ms) {
      if (!forward_->send_to(bytes, length, to_)) ++data_stats_.forward_failures;
      data_stats_.forwarded_late(link_now_ms() - arrival_ms);
    });
    relay_->deliver(Relay::kAck, [&](uint32_t flow, const unsigned char* bytes,
                                     std::size_t length, double arrival_ms) {
      ack_stats_.forwarded_late(link_now_ms() - arrival_ms);
      const net::Address* sender = sender_of(flow);
      if (sender == nullptr) {
        ++ack_stats_.unroutable;
      } else if (!listen_->send_to(bytes, length, *sender)) {
        ++ack_stats_.forward_failures;
      }
    });
    // On the relay's clock, as the poller's deadline is.
    return link_origin_ms_ == kNever ? kNever : relay_->next_event_ms() + link_origin_ms_;
  }

  void summarize() const {
    // The link time's origin (the first data datagram), so that its delivery
    // opportunities can be placed on the endpoints' clocks (which log theirs the same way).
    const double origin_offset_ms = link_origin_ms_ == kNever ? 0.0 : link_origin_ms_;
    std::fprintf(stderr, "ccgym-link: clock_origin_ns=%lld\n",
                 static_cast<long long>(clock_->origin_ns() + std::llround(origin_offset_ms * 1e6)));
    print_counters("data", relay_->counters(Relay::kData), data_stats_);
    print_counters("ack", relay_->counters(Relay::kAck), ack_stats_);
  }

 private:
  // The link's own time starts with the first data datagram, as a simulated link
  // starts with its sender: a trace's deliveries then line up with the sender's run
  // as they do in the simulator, however long the sender took to start.
  double link_now_ms() const {
    return link_origin_ms_ == kNever ? 0.0 : clock_->now_ms() - link_origin_ms_;
  }

  void remember(uint32_t flow, const net::Address& from) {
    for (auto& [known, address] : senders_) {
      if (known == flow) {
        address = from;  // a restarted sender of the same flow takes over
        return;
      }
    }
    senders_.emplace_back(flow, from);
  }

  const net::Address* sender_of(uint32_t flow) const {
    for (const auto& [known, address] : senders_) {
      if (known == flow) return &address;
    }
    return nullptr;
  }

  // Receives everything waiting on `socket` into the relay's `side`.
  void drain(net::UdpSocket& socket, Relay::Side side, SideStats& stats) {
    for (;;) {
      const uint32_t slot = relay_->acquire(side);
      const bool no_slot = slot == SlotPool::kNoSlot;
      // Without a free slot the datagram is read into scratch_ and dropped.
      unsigned char* buffer = no_slot ? scratch_ : relay_->slot(side, slot);
      const std::size_t capacity = no_slot ? sizeof scratch_ : relay_->slot_bytes(side);
      const ssize_t n = socket.receive(buffer, capacity, &from_);
      if (n < 0) {
        if (!no_slot) relay_->release(side, slot);
        return;
      }
      if (no_slot) {
        relay_->reject_pool_full(side);
        continue;
      }
      if (side == Relay::kAck && !from_.same(to_)) {
        ++stats.foreign;
        relay_->release(side, slot);
        continue;
      }
      if (side == Relay::kData && link_origin_ms_ == kNever) link_origin_ms_ = clock_->now_ms();
      uint32_t flow = 0;
      const bool ok =
          relay_->offer(side, slot, static_cast<std::size_t>(n), link_now_ms(), &flow);
      if (ok && side == Relay::kData) remember(flow, from_);
    }
  }

  std::unique_ptr<Relay> relay_;
  net::Address to_;
  net::UdpSocket* listen_;
  net::UdpSocket* forward_;
  const net::MsClock* clock_;
  double link_origin_ms_ = kNever;
  // flow id -> the sender's address, learned from its datagrams.
  std::vector<std::pair<uint32_t, net::Address>> senders_;
  net::Address from_;
  SideStats data_stats_;
  SideStats ack_stats_;
  unsigned char scratch_[65536];
};

int run(int argc, char** argv) {
  const Options options = parse_options(argc, argv);
  std::unique_ptr<Relay> relay;
  try {
    const LinkSpec spec = parse_link_spec(options.link);
    refuse_simulated_receivers(spec);
    // Seeded as the simulator seeds its directions: the same --seed gives the same
    // losses and Poisson deliveries here as in `ccgym eval`.
    relay = std::make_unique<Relay>(
        make_direction(spec.data, spec.delay_ms, spec.once,
                       derive_seed(options.seed, kDataDirectionPart)),
        make_direction(spec.ack, spec.delay_ms, spec.once,
                       derive_seed(options.seed, kAckDirectionPart)));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ccgym-link: --link: %s\n", e.what());
    return net::kExitUsage;
  }

  net::StopSignals signals;
  net::UdpSocket listen_socket(options.listen_address.family());
  net::UdpSocket forward_socket(options.to.family());
  try {
    listen_socket.bind(options.listen_address);
    if (options.forward_address.family() == options.to.family()) {
      forward_socket.bind(options.forward_address);
    }
  } catch (const net::PortInUse& e) {
    std::fprintf(stderr, "ccgym-link: %s\n", e.what());
    return net::kExitUsage;
  }
  listen_socket.set_buffer_bytes(kSocketBufferBytes);
  forward_socket.set_buffer_bytes(kSocketBufferBytes);
  net::tighten_timer_slack();

  net::MsClock clock;
  std::printf("listening on %s\n", listen_socket.local_address().to_string().c_str());
  std::fflush(stdout);
  UdpRelay udp_relay(std::move(relay), options.to, &listen_socket, &forward_socket, &clock);
  net::Poller poller;
  poller.on_readable(listen_socket.fd(), [&] { udp_relay.drain_data(); });
  poller.on_readable(forward_socket.fd(), [&] { udp_relay.drain_acks(); });
  poller.run(clock, signals, options.stop_ms,
             [&](double now_ms) { return udp_relay.turn(now_ms); });
  udp_relay.summarize();
  return 0;
}

}  // namespace
}  // namespace ccgym

int main(int argc, char** argv) {
  return ccgym::net::run_program("ccgym-link", ccgym::run, argc, argv);
}
