// Link specs: the one parser of `key=value,key=value` link strings, used by the
// simulator, the real-time relay and (through the binding) every Python verb.
//
//   trace=FILE[,ack_trace=FILE][,once=1],delay_ms=20
//   rate_mbps=12,delivery=poisson,delay_ms=30,queue=droptail:packets=100,loss=0.01
//
// Data-direction keys: trace, rate_mbps, delivery (constant|poisson|trace|burst),
// burst_packets, burst_period_ms, queue, loss, jitter_ms. The same keys prefixed with `ack_`
// describe the ACK direction, which by default has only the propagation delay.
// Shared keys: delay_ms (one way, each direction), once (traces run once), name, delayed_acks
// (the simulated receivers', simulator.hh).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "emulators/cpp/delivery.hh"
#include "emulators/cpp/link.hh"

namespace ccgym {

// Bounds on a spec's numbers. Outside them a value is a slip of units or a run that would take
// hours (10 Gbit/s is already 833 deliveries per ms), not a link worth emulating; the parser
// refuses it, naming the key and the bound.
inline constexpr double kMinRateMbps = 0.1;          // one 1500-byte packet every 120 ms
inline constexpr double kMaxRateMbps = 10000;        // 10 Gbit/s
inline constexpr double kMaxDelayMs = 1000;          // one way: an RTT of 2 s
inline constexpr double kMaxBurstPeriodMs = 10000;   // a burst at least every 10 s
inline constexpr double kMaxJitterMs = 100;          // timing noise, not a second delay

struct DirectionSpec {
  std::string trace;            // mahimahi trace path; empty when generated
  double rate_mbps = 0;         // 0 with no trace: unlimited
  std::string delivery;         // constant | poisson | trace | burst ("" = from the other keys)
  uint32_t burst_packets = 0;   // burst delivery: opportunities per burst
  double burst_period_ms = 0;   // burst delivery: time between bursts
  std::string queue = "infinite";
  double loss = 0;              // i.i.d. drop probability at ingress
  // Timing noise (ms): each packet's propagation takes up to this much longer, uniformly,
  // never overtaking the packet before it (LinkDirection). It breaks the phase lock of
  // flows at a DropTail queue that a noiseless clock keeps (Floyd and Jacobson 1991).
  // Unset: none, except on the ACK direction of a simulator with several flows
  // (kSharedAckJitterMs, simulator.hh).
  std::optional<double> jitter_ms;
};

struct LinkSpec {
  std::string name;
  DirectionSpec data;
  DirectionSpec ack;
  double delay_ms = 0;  // one-way propagation delay of each direction
  bool once = false;    // traces run once instead of repeating
  // Whether the simulator's receivers of classic flows delay their ACKs as TCP's do
  // (tcp_receiver.hh). Unset: they do where several flows share the link (simulator.hh). In
  // real time the receivers are real, and the relay and the link shell refuse the key.
  std::optional<bool> delayed_acks;

  std::string to_string() const;  // canonical spec string (parses back to the same)
};

// Parses a spec string; throws std::invalid_argument naming the bad key and the
// valid keys. Checks values (rates and delays within the bounds above, 0 <= loss < 1,
// queue spec parses, trace readable) so that a bad spec fails before anything runs.
LinkSpec parse_link_spec(const std::string& text);
// For the real-time links (the relay, the link shell): throws std::invalid_argument if the spec
// sets a key that only the simulator can honour (delayed_acks).
void refuse_simulated_receivers(const LinkSpec& spec);
std::vector<std::string> link_spec_keys();

// parse_link_spec's result for `text`, parsed at its first call in the process and shared by
// every later one (as traces are, make_direction): what the vectorized environments reset
// each episode's simulation from, so that an episode costs no parse. A spec that fails to
// parse is not kept (each call throws again).
std::shared_ptr<const LinkSpec> cached_link_spec(const std::string& text);

// A direction's mean rate (Mbit/s): its rate, its trace's or its bursts'; 0 if unlimited.
double mean_rate_mbps(const DirectionSpec& spec);

// Builds one direction from its spec. Traces are loaded once and shared.
std::unique_ptr<LinkDirection> make_direction(const DirectionSpec& spec, double delay_ms,
                                              bool once, uint64_t seed);

}  // namespace ccgym
