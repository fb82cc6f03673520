// The sender model every scheme runs under, in the simulator and in the UDP
// sender alike: window-limited (datagrump's in-flight count), paced when the
// controller asks, one ACK per datagram carrying its send and receive times,
// a timeout that sends one datagram when ACKs stop. The caller owns the clock.
#pragma once
#include <cassert>
#include <cstdint>
#include <memory>

#include "policies/cpp/controller.hh"
#include "policies/cpp/features.hh"

namespace ccgym {

class SenderModel {
 public:
  // keep_features: compute a learned policy's inputs (Features) on every send and ACK. A flow
  // under a classic scheme reads none of them, and they cost a tenth of its simulation.
  SenderModel(std::unique_ptr<Controller> controller, uint32_t flow, uint32_t packet_bytes,
              double start_ms, double stop_ms, bool keep_features);

  // True if a datagram may leave at now_ms (sender clock).
  bool can_send(double now_ms);
  // Records a datagram leaving now and returns its sequence number.
  uint64_t on_send(double now_ms);
  // An ACK for seq arrived at ack_ms.
  void on_ack(uint64_t seq, double send_ms, double recv_ms, double ack_ms);
  // True (once per expiry) when the timeout has run out by now_ms: the caller
  // then sends one datagram regardless of the window (after on_timeout()).
  bool timed_out(double now_ms);
  // The next time this sender wants to be woken (start, pacing, timeout); kNever if none.
  // When that time is a paced send, a caller woken late (a busy machine) catches up: the
  // sends keep the pacing schedule for up to kLateCreditMs of lateness, going at once as
  // far as the window allows; lateness beyond that is lost. The simulator wakes exactly on
  // time and never uses the credit.
  double next_wakeup_ms(double now_ms);

  // A sender starved of the CPU on a loaded host runs every 10-30 ms (ccgym-sender's logs at
  // load 11-16). Were it to send only a few packets per run, a paced flow would send a
  // fraction of its rate while that lasts, and bbr, whose rate samples measure its own
  // sending, loses its bandwidth estimate within 10 rounds (two packets of credit: 24 to 5
  // Mbit/s in 1 s with its process stopped 15 ms in every 17) and its share beside an
  // unpaced cubic, which sends its window whenever it runs. The kernel's paced flows are not
  // starved so (their pacing runs on the kernel's timers, and fq sends each packet whose
  // departure time has passed). A longer stall (the whole host) restarts the schedule rather
  // than bursting.
  static constexpr double kLateCreditMs = 50;

  uint64_t in_flight() const { return next_seq_ - next_ack_expected_; }
  uint64_t next_seq() const { return next_seq_; }
  uint32_t flow() const { return flow_; }
  uint32_t packet_bytes() const { return packet_bytes_; }
  bool active(double now_ms) const { return now_ms >= start_ms_ && now_ms < stop_ms_; }
  Controller& controller() { return *controller_; }
  bool keeps_features() const { return keep_features_; }
  const Features& features() const {
    assert(keep_features_ && "a classic flow's sender computes no features");
    return features_;
  }
  double window() { return controller_->window_size(); }

 private:
  double current_window();

  std::unique_ptr<Controller> controller_;
  Features features_;
  bool keep_features_;
  uint32_t flow_;
  uint32_t packet_bytes_;
  double start_ms_;
  double stop_ms_;
  uint64_t next_seq_ = 0;
  uint64_t next_ack_expected_ = 0;
  double last_progress_ms_;      // last ACK or timeout send: the timeout counts from here
  double next_paced_send_ms_ = 0;
  // The last next_wakeup_ms asked to be woken for a paced send (the window was open):
  // a send after that time is late, not a send that waited for the window or for data.
  bool pacing_due_ = false;
  // Packets of the current burst still to go before the schedule's next paced send.
  double burst_left_ = 0;
};

}  // namespace ccgym
