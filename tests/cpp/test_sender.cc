// SenderModel's pacing in virtual time: a caller that wakes exactly when asked (the
// simulator) gets the schedule back-to-back intervals give; a caller woken late (the
// real sender on a busy machine) keeps the pacing rate with bounded bursts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/cpp/time.hh"
#include "emulators/cpp/link.hh"
#include "emulators/cpp/spec.hh"
#include "policies/cpp/sender.hh"

namespace ccgym {
namespace {

constexpr uint32_t kPacketBytes = 1500;
constexpr double kRateMbps = 12;  // one 1500-byte packet per ms
constexpr double kIntervalMs = kPacketBytes * 8.0 / 1000.0 / kRateMbps;

// A constant pacing rate under a window the test sets; ACKs change nothing.
class ConstantRate final : public Controller {
 public:
  explicit ConstantRate(double window) : window_(window) {}
  void set_window(double window) { window_ = window; }
  double window_size() override { return window_; }
  double pacing_rate_mbps() override { return kRateMbps; }
  void on_ack(uint64_t, double, double, double) override {}
  double timeout_ms() override { return 1e9; }
  std::string name() const override { return "constant"; }

 private:
  double window_;
};

// Wakes the sender when it asks plus a lateness late(asked time) gives, sends what it
// may, until end_ms; returns the send times.
template <typename Late>
std::vector<double> run_paced(SenderModel& sender, double end_ms, Late late) {
  std::vector<double> sends;
  double now = 0;
  while (now < end_ms) {
    while (sender.can_send(now)) {
      sender.on_send(now);
      sends.push_back(now);
    }
    const double wake = sender.next_wakeup_ms(now);
    if (wake == kNever) break;
    now = wake + late(wake);
  }
  return sends;
}

SenderModel make_sender(double window) {
  return SenderModel(std::make_unique<ConstantRate>(window), 0, kPacketBytes, 0, 2000,
                     /*keep_features=*/false);
}

TEST(SenderPacing, OnTimeWakeupsSendOnTheScheduleOfAddedIntervals) {
  SenderModel sender = make_sender(1e6);
  const std::vector<double> sends = run_paced(sender, 1000, [](double) { return 0.0; });
  // The schedule the sender has always kept: each send one interval after the last.
  double expected = 0;
  ASSERT_GE(sends.size(), 999u);
  for (double t : sends) {
    EXPECT_EQ(t, expected);
    expected += kIntervalMs;
  }
}

TEST(SenderPacing, LateWakeupsKeepTheRateWithinTwoPackets) {
  SenderModel sender = make_sender(1e6);
  std::mt19937_64 rng(7);
  // Up to 1.5 intervals late on every wake-up: without catching up, a third of the rate.
  std::uniform_real_distribution<double> lateness(0, 1.5 * kIntervalMs);
  const std::vector<double> sends = run_paced(sender, 1000, [&](double) { return lateness(rng); });
  const double expected = 1000 / kIntervalMs;
  EXPECT_NEAR(static_cast<double>(sends.size()), expected, 2.0);
}

TEST(SenderPacing, ALongStallCatchesUpAtMostTheCredit) {
  SenderModel sender = make_sender(1e6);
  int wakeups = 0;
  // The fifth wake-up comes 150 intervals late (three times the credit), the others on time.
  const std::vector<double> sends =
      run_paced(sender, 400, [&](double) { return ++wakeups == 5 ? 150 * kIntervalMs : 0.0; });
  std::size_t largest_burst = 0;
  for (std::size_t i = 0; i < sends.size();) {
    const std::size_t j = static_cast<std::size_t>(
        std::upper_bound(sends.begin(), sends.end(), sends[i]) - sends.begin());
    largest_burst = std::max(largest_burst, j - i);
    i = j;
  }
  // The packet due and the credit's worth of the schedule.
  EXPECT_EQ(largest_burst, 1 + static_cast<std::size_t>(SenderModel::kLateCreditMs / kIntervalMs));
  // The stall's time is lost beyond the credit: no catching up of the whole 150 packets.
  EXPECT_LT(sends.size(), 400 / kIntervalMs - 90);
}

TEST(SenderPacing, ASenderWokenOnlyEvery15MsKeepsItsRate) {
  SenderModel sender = make_sender(1e6);
  // A process starved of the CPU runs only every 15 ms (a loaded host), however soon it
  // asked to be woken: each run sends what the schedule had due.
  const std::vector<double> sends =
      run_paced(sender, 1000, [](double asked) { return 15 * std::ceil(asked / 15) - asked; });
  EXPECT_NEAR(static_cast<double>(sends.size()), 1000 / kIntervalMs, 15 / kIntervalMs + 1);
}

TEST(SenderPacing, ASendThatWaitedForTheWindowEarnsNoCredit) {
  auto controller = std::make_unique<ConstantRate>(1);
  ConstantRate* rate = controller.get();
  SenderModel sender(std::move(controller), 0, kPacketBytes, 0, 2000, false);
  ASSERT_TRUE(sender.can_send(0));
  const uint64_t seq = sender.on_send(0);
  EXPECT_FALSE(sender.can_send(0));
  sender.next_wakeup_ms(0);  // the window is full: the sender waits for the ACK
  // The ACK comes 10 intervals later and the window opens wide: one send now, the
  // next one interval later, as before the window stalled; no burst of 'credit'.
  const double ack_ms = 10 * kIntervalMs;
  sender.on_ack(seq, 0, ack_ms, ack_ms);
  rate->set_window(1e6);
  ASSERT_TRUE(sender.can_send(ack_ms));
  sender.on_send(ack_ms);
  EXPECT_FALSE(sender.can_send(ack_ms));
  EXPECT_EQ(sender.next_wakeup_ms(ack_ms), ack_ms + kIntervalMs);
}

// bbr through a simulated link, driven as ccgym-sender drives it on the wall clock: the
// sender's process takes ACKs in and sends only when it runs. It runs when it asks, or when
// an ACK arrives, except from starve_from_ms to starve_to_ms, when it runs only every 15 ms
// (a process starved of the CPU on a loaded host). Returns bbr's pacing rate (Mbit/s) at
// starve_to_ms and the mean delivery rate (Mbit/s) while starved.
struct StarvedRun {
  double pacing_after_mbps;
  double delivered_while_starved_mbps;
};

StarvedRun run_bbr_starved(double starve_from_ms, double starve_to_ms) {
  constexpr double kRunEveryMs = 15;
  const LinkSpec link = parse_link_spec("rate_mbps=24,delay_ms=20,queue=droptail:packets=40");
  auto data = make_direction(link.data, link.delay_ms, link.once, 1);
  auto ack = make_direction(link.ack, link.delay_ms, link.once, 2);
  SenderModel sender(make_controller("bbr", 1), 0, kPacketBytes, 0, kNever, false);
  std::vector<Packet> waiting;  // ACKs that arrived while the process did not run
  double delivered_bytes = 0;
  double now = 0;
  double asked = 0;  // when the sender last asked to be woken
  while (now < starve_to_ms) {
    data->advance(now);
    ack->advance(now);
    for (const LinkDirection::Arrival& arrival : data->arrivals()) {
      if (arrival.arrival_ms >= starve_from_ms) delivered_bytes += arrival.packet.bytes;
      Packet reply = arrival.packet;
      reply.bytes = kAckPacketBytes;
      reply.recv_ms = arrival.arrival_ms;
      ack->send(reply, arrival.arrival_ms);
    }
    data->clear_arrivals();
    data->clear_dropped();
    ack->advance(now);
    for (const LinkDirection::Arrival& arrival : ack->arrivals()) waiting.push_back(arrival.packet);
    ack->clear_arrivals();
    const bool starved = now >= starve_from_ms && now < starve_to_ms;
    const bool runs = !starved || std::fmod(now, kRunEveryMs) == 0;
    if (runs && (now >= asked || !waiting.empty())) {
      for (const Packet& a : waiting) sender.on_ack(a.seq, a.sent_ms, a.recv_ms, now);
      waiting.clear();
      bool force = sender.timed_out(now);
      while (force || sender.can_send(now)) {
        force = false;
        Packet p;
        p.bytes = kPacketBytes;
        p.sent_ms = now;
        p.seq = sender.on_send(now);
        data->advance(now);
        data->send(p, now);
      }
      asked = sender.next_wakeup_ms(now);
    }
    double next = std::min({data->next_event_ms(), ack->next_event_ms(), asked});
    if (!waiting.empty()) next = now;  // ACKs wait only for the process's next run
    if (next >= starve_from_ms && next < starve_to_ms) {
      next = kRunEveryMs * std::ceil(std::max(next, now + 1e-6) / kRunEveryMs);
    }
    now = std::max(next, std::nextafter(now, kNever));
  }
  return {sender.controller().pacing_rate_mbps(),
          delivered_bytes * 8 / 1000 / (starve_to_ms - starve_from_ms)};
}

// On the old credit of two packets per wake-up the starved bbr sent 3 packets every 15 ms,
// its rate samples measured that, and its estimate fell to a tenth of the link's.
TEST(SenderPacing, BbrStarvedOfTheCpuKeepsItsBandwidthEstimate) {
  const StarvedRun starved = run_bbr_starved(3000, 5000);
  EXPECT_GT(starved.delivered_while_starved_mbps, 0.8 * 24);
  EXPECT_GT(starved.pacing_after_mbps, 0.6 * 24);
}

}  // namespace
}  // namespace ccgym
