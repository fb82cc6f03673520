// One direction of a path: delivery process + queue + i.i.d. loss + propagation
// delay (+ timing noise: jitter_ms). The clock is always an argument (virtual time in the simulator, the wall
// clock in the relay): this class never reads one.
#pragma once
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "emulators/cpp/delivery.hh"
#include "common/cpp/packet.hh"
#include "emulators/cpp/queue.hh"
#include "common/cpp/ring.hh"

namespace ccgym {

class LinkDirection {
 public:
  LinkDirection(std::unique_ptr<DeliveryProcess> delivery, std::unique_ptr<Queue> queue,
                double loss_rate, double delay_ms, uint64_t seed, double jitter_ms = 0,
                uint64_t jitter_seed = 0);

  // A packet enters the direction at now_ms. Call advance(now_ms) first so that
  // opportunities before now are not used by it. Returns false if it was dropped
  // (by loss or by the queue); the drop is also appended to dropped().
  bool send(const Packet& packet, double now_ms);

  // Uses every opportunity at or before now_ms, then moves packets whose
  // propagation delay has elapsed by now_ms into arrivals().
  void advance(double now_ms);

  // Earliest time at which advance() would change anything; kNever if idle.
  double next_event_ms() const;
  // No packet reaches the far end before this (kNever if none is on its way or queued): the
  // oldest in propagation's arrival, or, with none in propagation, the next opportunity
  // plus the delay.
  double next_arrival_bound_ms() const;
  // Packets go straight into propagation: no rate, no queue.
  bool unlimited() const { return delivery_->unlimited(); }

  // Packets that have arrived at the far end, with their arrival times, oldest
  // first; the caller consumes them and clears with clear_arrivals().
  struct Arrival {
    Packet packet;
    double arrival_ms;
  };
  const std::vector<Arrival>& arrivals() const { return arrivals_; }
  void clear_arrivals() { arrivals_.clear(); }
  const std::vector<Packet>& dropped() const { return dropped_; }
  void clear_dropped() { dropped_.clear(); }

  // Records each opportunity's time (ms) while enabled: the link's capacity.
  void record_opportunities(bool on) { record_opportunities_ = on; }
  const std::vector<double>& opportunities() const { return opportunities_; }
  // Opportunities so far, used or not, also while not recording: the capacity of a step.
  uint64_t opportunity_count() const { return opportunity_count_; }

  const Queue& queue() const { return *queue_; }
  double delay_ms() const { return delay_ms_; }
  std::string to_string() const;

 private:
  void use_opportunity(double at_ms);
  // Puts a packet that left the queue at departed_ms on its way: the propagation delay,
  // plus the jitter's draw, no earlier than the packet before it.
  void propagate(const Packet& packet, double departed_ms);

  std::unique_ptr<DeliveryProcess> delivery_;
  std::unique_ptr<Queue> queue_;
  double loss_rate_;
  double delay_ms_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> uniform_{0.0, 1.0};
  double jitter_ms_;
  // The jitter's own stream (common/cpp/splitmix.hh): the loss draws stay those of a
  // link without jitter, and a draw costs a few instructions.
  uint64_t jitter_state_;
  double last_arrival_ms_ = 0;  // the path is FIFO: no packet arrives before the one ahead

  bool in_service_ = false;     // a packet is partly transmitted
  Packet service_{};
  uint32_t service_left_ = 0;   // its bytes not yet carried by an opportunity
  Ring<Arrival> delay_line_;    // departed, in propagation; FIFO since the delay is constant
  std::vector<Arrival> arrivals_;
  std::vector<Packet> dropped_;
  bool record_opportunities_ = false;
  std::vector<double> opportunities_;
  uint64_t opportunity_count_ = 0;
};

}  // namespace ccgym
