// TcpReceiver: which ACK records leave when, for a delaying receiver and an answering one.
#include "emulators/cpp/tcp_receiver.hh"

#include <gtest/gtest.h>

#include <vector>

namespace ccgym {
namespace {

struct Sent {
  uint64_t seq;
  double at_ms;
};

// Feeds packets `seqs`, one every `gap_ms` from t = 0 (each sent 50 ms before it arrives), and
// fires the timer before each arrival and once at `end_ms`; returns what left, in order.
std::vector<Sent> acks_for(TcpReceiver& receiver, const std::vector<uint64_t>& seqs,
                           double gap_ms, double end_ms) {
  std::vector<Sent> out;
  const auto send = [&](const Packet& ack, double at_ms) { out.push_back({ack.seq, at_ms}); };
  double t = 0;
  for (uint64_t seq : seqs) {
    receiver.on_timer(t, send);
    Packet ack;
    ack.seq = seq;
    ack.sent_ms = t - 50;
    receiver.on_arrival(ack, t, send);
    t += gap_ms;
  }
  receiver.on_timer(end_ms, send);
  return out;
}

std::vector<uint64_t> range(uint64_t from, uint64_t to) {
  std::vector<uint64_t> seqs;
  for (uint64_t s = from; s < to; ++s) seqs.push_back(s);
  return seqs;
}

TEST(TcpReceiver, AnAnsweringReceiverSendsEachAckAtOnce) {
  TcpReceiver receiver(/*delays=*/false, /*ack_path_ms=*/20);
  const auto out = acks_for(receiver, range(0, 40), 1, 1000);
  ASSERT_EQ(out.size(), 40u);
  for (std::size_t i = 0; i < out.size(); ++i) {
    EXPECT_DOUBLE_EQ(out[i].at_ms, static_cast<double>(i));
  }
}

TEST(TcpReceiver, AfterItsQuickAcksItAcknowledgesEverySecondPacketAtTheSecond) {
  TcpReceiver receiver(/*delays=*/true, /*ack_path_ms=*/20);
  const auto out = acks_for(receiver, range(0, 40), 1, 39.5);
  ASSERT_EQ(out.size(), 40u);
  for (int i = 0; i < TcpReceiver::kQuickAcks; ++i) EXPECT_DOUBLE_EQ(out[i].at_ms, i);
  for (std::size_t i = TcpReceiver::kQuickAcks; i < out.size(); ++i) {
    const uint64_t second = i % 2 == 0 ? i + 1 : i;  // packets 16 and 17 leave at 17, ...
    EXPECT_EQ(out[i].seq, i);
    EXPECT_DOUBLE_EQ(out[i].at_ms, static_cast<double>(second)) << i;
  }
}

TEST(TcpReceiver, ALonePacketsAckLeavesWhenTheDelayedAckTimerRunsOut) {
  TcpReceiver receiver(/*delays=*/true, /*ack_path_ms=*/20);
  const auto seqs = range(0, TcpReceiver::kQuickAcks + 1);  // the last one is alone
  const double last_ms = TcpReceiver::kQuickAcks * 100.0;
  auto out = acks_for(receiver, seqs, 100, last_ms + TcpReceiver::kDelayedAckMs - 1);
  EXPECT_EQ(out.size(), seqs.size() - 1);  // not yet
  EXPECT_DOUBLE_EQ(receiver.next_due_ms(), last_ms + TcpReceiver::kDelayedAckMs);
  receiver.on_timer(last_ms + TcpReceiver::kDelayedAckMs,
                    [&](const Packet& ack, double at_ms) { out.push_back({ack.seq, at_ms}); });
  ASSERT_EQ(out.size(), seqs.size());
  EXPECT_DOUBLE_EQ(out.back().at_ms, last_ms + TcpReceiver::kDelayedAckMs);
  EXPECT_EQ(receiver.next_due_ms(), kNever);
}

TEST(TcpReceiver, AGapIsAnsweredPacketByPacketUntilTheSenderCouldHaveKnownOfIt) {
  // Packets every ms after the quick ACKs, sent 50 ms before they arrive, the ACK path 20 ms:
  // the gap at 30 (29 lost) is seen at t = 29; packets sent by t = 49 (arriving by 99) are
  // behind it.
  std::vector<uint64_t> seqs = range(0, 29);
  for (uint64_t s = 30; s < 120; ++s) seqs.push_back(s);
  TcpReceiver receiver(/*delays=*/true, /*ack_path_ms=*/20);
  const auto out = acks_for(receiver, seqs, 1, 1000);
  // Packet seq arrived at seq ms before the gap, seq - 1 after it.
  const auto arrival_ms_of = [](uint64_t seq) {
    return static_cast<double>(seq < 29 ? seq : seq - 1);
  };
  for (const Sent& s : out) {
    const double arrival_ms = arrival_ms_of(s.seq);
    if (s.seq >= 30 && arrival_ms <= 99) {
      EXPECT_DOUBLE_EQ(s.at_ms, arrival_ms) << s.seq;  // at once
    } else if (s.seq >= 30 && arrival_ms >= 101 && s.seq != seqs.back()) {
      EXPECT_GE(s.at_ms - arrival_ms, 0.0) << s.seq;
      EXPECT_LE(s.at_ms - arrival_ms, 1.0) << s.seq;  // held for the next, 1 ms on
    }
  }
  int held = 0;
  for (const Sent& s : out) held += s.seq >= 30 && s.at_ms > arrival_ms_of(s.seq);
  EXPECT_GT(held, 5);  // pairing resumes after the gap
}

}  // namespace
}  // namespace ccgym
