// The endpoints' event loop (deploy/cpp/poller.hh) on real pipes and the real clock:
// readers run when their descriptor is readable, turns wake when they ask, and the
// loop ends at the deadline. Bounds are loose: they hold on a loaded machine.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>

#include "deploy/cpp/net.hh"
#include "deploy/cpp/poller.hh"

namespace ccgym::net {
namespace {

// A non-blocking pipe that closes itself.
struct Pipe {
  int fds[2] = {-1, -1};
  Pipe() {
    EXPECT_EQ(::pipe2(fds, O_NONBLOCK), 0);
  }
  ~Pipe() {
    ::close(fds[0]);
    ::close(fds[1]);
  }
  void put(char c) const { EXPECT_EQ(::write(fds[1], &c, 1), 1); }
  int drain() const {  // bytes read
    char buffer[64];
    int total = 0;
    ssize_t n;
    while ((n = ::read(fds[0], buffer, sizeof buffer)) > 0) total += static_cast<int>(n);
    return total;
  }
};

TEST(Poller, EndsAtTheDeadlineAndWakesWhenATurnAsks) {
  StopSignals signals;
  MsClock clock;
  Poller poller;
  int turns = 0;
  // Each turn asks to be woken 5 ms later: about 20 turns in 100 ms, never more
  // than the wake-ups asked for (a busy loop would make thousands).
  poller.run(clock, signals, 100, [&](double now_ms) {
    ++turns;
    return now_ms + 5;
  });
  EXPECT_GE(clock.now_ms(), 100);
  EXPECT_GE(turns, 2);
  EXPECT_LE(turns, 22);
}

TEST(Poller, ReadsWhatArrivesAndOnlyFromTheDescriptorThatHasIt) {
  StopSignals signals;
  MsClock clock;
  Pipe a;
  Pipe b;
  int read_a = 0;
  int calls_b = 0;
  int turns = 0;
  Poller poller;
  poller.on_readable(a.fds[0], [&] { read_a += a.drain(); });
  poller.on_readable(b.fds[0], [&] {
    ++calls_b;
    b.drain();
  });
  a.put('x');
  // The turns put one byte into `a` each until five arrived; no turn asks for a
  // time-out, so only the pipe's data wakes the loop until the deadline.
  poller.run(clock, signals, 300, [&](double) {
    ++turns;
    if (read_a < 5) a.put('x');
    return INFINITY;
  });
  EXPECT_EQ(read_a, 5);
  EXPECT_GE(clock.now_ms(), 300);
  EXPECT_EQ(calls_b, 1) << "b's reader runs on the first turn only: nothing arrived on it";
  EXPECT_EQ(turns, 5) << "one turn per wake: the first, then one per byte a turn put";
}

}  // namespace
}  // namespace ccgym::net
