// SenderModel's pacing in virtual time: a caller that wakes exactly when asked (the
// simulator) gets the schedule back-to-back intervals give; a caller woken late (the
// real sender on a busy machine) keeps the pacing rate with bounded bursts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/cpp/time.hh"
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

// Wakes the sender when it asks plus a lateness drawn by late(), sends what it may,
// until end_ms; returns the send times.
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
    now = wake + late();
  }
  return sends;
}

SenderModel make_sender(double window) {
  return SenderModel(std::make_unique<ConstantRate>(window), 0, kPacketBytes, 0, 2000);
}

TEST(SenderPacing, OnTimeWakeupsSendOnTheScheduleOfAddedIntervals) {
  SenderModel sender = make_sender(1e6);
  const std::vector<double> sends = run_paced(sender, 1000, [] { return 0.0; });
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
  const std::vector<double> sends = run_paced(sender, 1000, [&] { return lateness(rng); });
  const double expected = 1000 / kIntervalMs;
  EXPECT_NEAR(static_cast<double>(sends.size()), expected, 2.0);
}

TEST(SenderPacing, ALongStallCatchesUpAtMostTheCredit) {
  SenderModel sender = make_sender(1e6);
  int wakeups = 0;
  // The fifth wake-up comes 50 intervals late, the others on time.
  const std::vector<double> sends =
      run_paced(sender, 200, [&] { return ++wakeups == 5 ? 50 * kIntervalMs : 0.0; });
  std::size_t largest_burst = 0;
  for (std::size_t i = 0; i < sends.size();) {
    const std::size_t j = static_cast<std::size_t>(
        std::upper_bound(sends.begin(), sends.end(), sends[i]) - sends.begin());
    largest_burst = std::max(largest_burst, j - i);
    i = j;
  }
  EXPECT_EQ(largest_burst, 1 + static_cast<std::size_t>(SenderModel::kLateCreditPackets));
  // The stall's time is lost beyond the credit: no catching up of the whole 50 packets.
  EXPECT_LT(sends.size(), 200 / kIntervalMs - 40);
}

TEST(SenderPacing, ASendThatWaitedForTheWindowEarnsNoCredit) {
  auto controller = std::make_unique<ConstantRate>(1);
  ConstantRate* rate = controller.get();
  SenderModel sender(std::move(controller), 0, kPacketBytes, 0, 2000);
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

}  // namespace
}  // namespace ccgym
