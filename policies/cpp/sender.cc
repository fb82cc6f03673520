#include "policies/cpp/sender.hh"

#include <algorithm>
#include <cmath>

#include "common/cpp/time.hh"

namespace ccgym {

namespace {
// Bits per byte over bits per ms in one Mbit/s: ms to send a byte at 1 Mbit/s.
constexpr double kMsPerByteAtOneMbps = 8.0 / 1000.0;
}  // namespace

SenderModel::SenderModel(std::unique_ptr<Controller> controller, uint32_t flow,
                         uint32_t packet_bytes, double start_ms, double stop_ms,
                         bool keep_features)
    : controller_(std::move(controller)),
      keep_features_(keep_features),
      flow_(flow),
      packet_bytes_(packet_bytes),
      start_ms_(start_ms),
      stop_ms_(stop_ms),
      last_progress_ms_(start_ms) {}

double SenderModel::current_window() {
  const double w = controller_->window_size();
  return std::isfinite(w) ? std::max(1.0, w) : 1.0;
}

bool SenderModel::can_send(double now_ms) {
  if (!active(now_ms)) return false;
  if (static_cast<double>(in_flight()) + 1 > current_window() + 1e-9) return false;
  return now_ms >= next_paced_send_ms_ || burst_left_ >= 1;
}

uint64_t SenderModel::on_send(double now_ms) {
  const uint64_t seq = next_seq_++;
  if (keep_features_) features_.on_sent(seq, packet_bytes_, now_ms);
  controller_->on_sent(seq, now_ms);
  const double rate = controller_->pacing_rate_mbps();
  if (rate > 0 && std::isfinite(rate)) {
    const double interval_ms = packet_bytes_ * kMsPerByteAtOneMbps / rate;
    // On time (now == next_paced_send_ms_) both branches give the same schedule. A late
    // wake-up keeps the schedule up to the credit; a send that waited for the window
    // starts a new one, as a sender with nothing to send earns no credit.
    const double earliest_ms = pacing_due_ ? now_ms - kLateCreditMs : now_ms;
    // A burst's first packet goes on the schedule; the rest of it follow at once, each
    // still moving the schedule on by its own packet time.
    burst_left_ = now_ms >= next_paced_send_ms_ ? controller_->send_quantum_packets() - 1
                                                : burst_left_ - 1;
    next_paced_send_ms_ = std::max(next_paced_send_ms_, earliest_ms) + interval_ms;
  } else {
    next_paced_send_ms_ = now_ms;
    burst_left_ = 0;
  }
  return seq;
}

void SenderModel::on_ack(uint64_t seq, double send_ms, double recv_ms, double ack_ms) {
  next_ack_expected_ = std::max(next_ack_expected_, seq + 1);
  last_progress_ms_ = ack_ms;
  if (keep_features_) features_.on_ack(seq, packet_bytes_, send_ms, ack_ms);
  controller_->on_ack(seq, send_ms, recv_ms, ack_ms);
}

bool SenderModel::timed_out(double now_ms) {
  if (!active(now_ms)) return false;
  if (now_ms < last_progress_ms_ + controller_->timeout_ms()) return false;
  last_progress_ms_ = now_ms;
  controller_->on_timeout(now_ms);
  // The timeout's datagram goes now, whatever the pacing said.
  next_paced_send_ms_ = std::min(next_paced_send_ms_, now_ms);
  return true;
}

double SenderModel::next_wakeup_ms(double now_ms) {
  pacing_due_ = false;
  if (now_ms >= stop_ms_) return kNever;
  if (now_ms < start_ms_) return start_ms_;
  double next = last_progress_ms_ + controller_->timeout_ms();
  const bool window_open = static_cast<double>(in_flight()) + 1 <= current_window() + 1e-9;
  // A burst the window cut short is not resumed when it opens: the rest waits for the
  // schedule, as a kernel's pacing timer holds what cwnd did not let out.
  if (!window_open) burst_left_ = 0;
  if (window_open) {
    next = std::min(next, burst_left_ >= 1 ? now_ms : std::max(now_ms, next_paced_send_ms_));
  }
  pacing_due_ = window_open && next_paced_send_ms_ > now_ms;
  return next < stop_ms_ ? next : kNever;
}

}  // namespace ccgym
