#include "emulators/cpp/link.hh"

#include <algorithm>
#include <cassert>
#include <sstream>

#include "common/cpp/splitmix.hh"

namespace ccgym {

LinkDirection::LinkDirection(std::unique_ptr<DeliveryProcess> delivery,
                             std::unique_ptr<Queue> queue, double loss_rate, double delay_ms,
                             uint64_t seed, double jitter_ms, uint64_t jitter_seed)
    : delivery_(std::move(delivery)),
      queue_(std::move(queue)),
      loss_rate_(loss_rate),
      delay_ms_(delay_ms),
      rng_(seed),
      jitter_ms_(jitter_ms),
      jitter_state_(jitter_seed) {
  arrivals_.reserve(256);
  dropped_.reserve(64);
}

bool LinkDirection::send(const Packet& packet, double now_ms) {
  if (loss_rate_ > 0 && uniform_(rng_) < loss_rate_) {
    dropped_.push_back(packet);
    return false;
  }
  if (delivery_->unlimited()) {
    propagate(packet, now_ms);
    return true;
  }
  Packet queued = packet;
  queued.enqueued_ms = now_ms;
  if (!queue_->enqueue(queued, now_ms)) {
    dropped_.push_back(packet);
    return false;
  }
  return true;
}

void LinkDirection::use_opportunity(double at_ms) {
  uint32_t budget = kOpportunityBytes;
  while (budget > 0) {
    if (!in_service_) {
      if (!queue_->dequeue(at_ms, service_, dropped_)) return;  // the rest is lost
      in_service_ = true;
      service_left_ = service_.bytes;
    }
    const uint32_t take = std::min(budget, service_left_);
    service_left_ -= take;
    budget -= take;
    if (service_left_ == 0) {
      in_service_ = false;
      propagate(service_, at_ms);
    }
  }
}

void LinkDirection::propagate(const Packet& packet, double departed_ms) {
  double arrival_ms = departed_ms + delay_ms_;
  if (jitter_ms_ > 0) {
    const double uniform = splitmix64_uniform(jitter_state_);
    arrival_ms = std::max(arrival_ms + jitter_ms_ * uniform, last_arrival_ms_);
  }
  last_arrival_ms_ = arrival_ms;
  delay_line_.push_back({packet, arrival_ms});
}

void LinkDirection::advance(double now_ms) {
  // Opportunities before now are used (or lost) in time order; recording them
  // even when idle is what makes the capacity measurable.
  for (double t = delivery_->next_ms(); t <= now_ms; t = delivery_->next_ms()) {
    delivery_->pop();
    ++opportunity_count_;
    if (record_opportunities_) opportunities_.push_back(t);
    if (in_service_ || !queue_->empty()) use_opportunity(t);
  }
  while (!delay_line_.empty() && delay_line_.front().arrival_ms <= now_ms) {
    arrivals_.push_back(delay_line_.front());
    delay_line_.pop_front();
  }
}

double LinkDirection::next_event_ms() const {
  double next = delay_line_.empty() ? kNever : delay_line_.front().arrival_ms;
  // An idle link's opportunities change nothing but the record of capacity,
  // which advance() catches up on whenever it is called.
  if (in_service_ || !queue_->empty()) next = std::min(next, delivery_->next_ms());
  return next;
}

double LinkDirection::next_arrival_bound_ms() const {
  if (!delay_line_.empty()) return delay_line_.front().arrival_ms;  // FIFO: the first to arrive
  return in_service_ || !queue_->empty() ? delivery_->next_ms() + delay_ms_ : kNever;
}

std::string LinkDirection::to_string() const {
  std::ostringstream out;
  out << delivery_->to_string() << " queue=" << queue_->to_string() << " loss=" << loss_rate_
      << " delay_ms=" << delay_ms_;
  if (jitter_ms_ > 0) out << " jitter_ms=" << jitter_ms_;
  return out.str();
}

}  // namespace ccgym
