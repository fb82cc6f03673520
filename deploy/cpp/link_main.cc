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

int run(int argc, char** argv) {
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
  const uint64_t port = flags.integer("listen");
  if (port > 65535) flags.fail("--listen must be at most 65535");
  const double duration_s = flags.number("duration-s");
  if (duration_s < 0) flags.fail("--duration-s must be >= 0");
  const double stop_ms = duration_s > 0 ? duration_s * 1000 : kNever;
  const uint64_t seed = flags.integer("seed");

  net::Address to;
  net::Address listen_address;
  net::Address forward_address;
  try {
    to = net::Address::parse(flags.text("to"));
    listen_address = net::Address::resolve(flags.text("bind"), static_cast<uint16_t>(port));
    forward_address = net::Address::resolve(flags.text("bind"), 0);
  } catch (const std::invalid_argument& e) {
    flags.fail(e.what());
  }

  std::unique_ptr<Relay> relay;
  try {
    const LinkSpec spec = parse_link_spec(flags.text("link"));
    // Seeded as the simulator seeds its directions: the same --seed gives the same
    // losses and Poisson deliveries here as in `ccgym eval`.
    relay = std::make_unique<Relay>(
        make_direction(spec.data, spec.delay_ms, spec.once, derive_seed(seed, kDataDirectionPart)),
        make_direction(spec.ack, spec.delay_ms, spec.once, derive_seed(seed, kAckDirectionPart)));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ccgym-link: --link: %s\n", e.what());
    return net::kExitUsage;
  }

  net::StopSignals signals;
  net::UdpSocket listen_socket(listen_address.family());
  net::UdpSocket forward_socket(to.family());
  try {
    listen_socket.bind(listen_address);
    if (forward_address.family() == to.family()) forward_socket.bind(forward_address);
  } catch (const net::PortInUse& e) {
    std::fprintf(stderr, "ccgym-link: %s\n", e.what());
    return net::kExitUsage;
  }
  listen_socket.set_buffer_bytes(kSocketBufferBytes);
  forward_socket.set_buffer_bytes(kSocketBufferBytes);
  net::tighten_timer_slack();

  net::MsClock clock;
  // The link's own time starts with the first data datagram, as a simulated link
  // starts with its sender: a trace's deliveries then line up with the sender's run
  // as they do in the simulator, however long the sender took to start.
  double link_origin_ms = kNever;
  const auto link_now_ms = [&] {
    return link_origin_ms == kNever ? 0.0 : clock.now_ms() - link_origin_ms;
  };
  std::printf("listening on %s\n", listen_socket.local_address().to_string().c_str());
  std::fflush(stdout);

  // flow id -> the sender's address, learned from its datagrams.
  std::vector<std::pair<uint32_t, net::Address>> senders;
  senders.reserve(kExpectedFlows);
  const auto remember = [&](uint32_t flow, const net::Address& from) {
    for (auto& [known, address] : senders) {
      if (known == flow) {
        address = from;  // a restarted sender of the same flow takes over
        return;
      }
    }
    senders.emplace_back(flow, from);
  };
  const auto sender_of = [&](uint32_t flow) -> const net::Address* {
    for (const auto& [known, address] : senders) {
      if (known == flow) return &address;
    }
    return nullptr;
  };

  // Where a datagram goes when no slot is free or it is too long: read and dropped.
  static unsigned char scratch[65536];
  SideStats data_stats;
  SideStats ack_stats;
  net::Address from;

  // Receives everything waiting on `socket` into the relay's `side`.
  const auto drain = [&](net::UdpSocket& socket, Relay::Side side, SideStats& stats) {
    for (;;) {
      const uint32_t slot = relay->acquire(side);
      unsigned char* buffer = slot == SlotPool::kNoSlot ? scratch : relay->slot(side, slot);
      const std::size_t capacity =
          slot == SlotPool::kNoSlot ? sizeof scratch : relay->slot_bytes(side);
      const ssize_t n = socket.receive(buffer, capacity, &from);
      if (n < 0) {
        if (slot != SlotPool::kNoSlot) relay->release(side, slot);
        return;
      }
      if (slot == SlotPool::kNoSlot) {
        relay->reject_pool_full(side);
        continue;
      }
      if (side == Relay::kAck && !from.same(to)) {
        ++stats.foreign;
        relay->release(side, slot);
        continue;
      }
      if (side == Relay::kData && link_origin_ms == kNever) link_origin_ms = clock.now_ms();
      uint32_t flow = 0;
      const bool ok = relay->offer(side, slot, static_cast<std::size_t>(n), link_now_ms(), &flow);
      if (ok && side == Relay::kData) remember(flow, from);
    }
  };

  pollfd fds[2] = {{listen_socket.fd(), POLLIN, 0}, {forward_socket.fd(), POLLIN, 0}};
  while (!signals.requested()) {
    if (clock.now_ms() >= stop_ms) break;
    drain(listen_socket, Relay::kData, data_stats);
    drain(forward_socket, Relay::kAck, ack_stats);

    relay->advance(link_now_ms());
    relay->deliver(Relay::kData, [&](uint32_t, const unsigned char* bytes, std::size_t length,
                                     double arrival_ms) {
      if (!forward_socket.send_to(bytes, length, to)) ++data_stats.forward_failures;
      data_stats.forwarded_late(link_now_ms() - arrival_ms);
    });
    relay->deliver(Relay::kAck, [&](uint32_t flow, const unsigned char* bytes, std::size_t length,
                                    double arrival_ms) {
      ack_stats.forwarded_late(link_now_ms() - arrival_ms);
      const net::Address* sender = sender_of(flow);
      if (sender == nullptr) {
        ++ack_stats.unroutable;
      } else if (!listen_socket.send_to(bytes, length, *sender)) {
        ++ack_stats.forward_failures;
      }
    });

    // Both in the relay's clock: stop_ms counts from the relay's start.
    const double next_event_ms =
        link_origin_ms == kNever ? kNever : relay->next_event_ms() + link_origin_ms;
    const double wake_ms = std::min(next_event_ms, stop_ms);
    net::wait(fds, 2, wake_ms - clock.now_ms(), signals);
  }

  // The link time's origin (the first data datagram), so that its delivery
  // opportunities can be placed on the endpoints' clocks (which log theirs the same way).
  const double origin_offset_ms = link_origin_ms == kNever ? 0.0 : link_origin_ms;
  std::fprintf(stderr, "ccgym-link: clock_origin_ns=%lld\n",
               static_cast<long long>(clock.origin_ns() + std::llround(origin_offset_ms * 1e6)));
  print_counters("data", relay->counters(Relay::kData), data_stats);
  print_counters("ack", relay->counters(Relay::kAck), ack_stats);
  return 0;
}

}  // namespace
}  // namespace ccgym

int main(int argc, char** argv) {
  return ccgym::net::run_program("ccgym-link", ccgym::run, argc, argv);
}
