// The endpoints' one event loop, after mahimahi's Poller: a main registers what to
// do when a descriptor is readable and what to do on every turn, then calls run().
// The loop is the only place that sleeps, checks the stop signals and the deadline.
#pragma once
#include <poll.h>

#include <functional>
#include <vector>

#include "deploy/cpp/net.hh"

namespace ccgym::net {

class Poller {
 public:
  // Reads everything waiting on its descriptor (they are non-blocking).
  using Reader = std::function<void()>;
  // The work of one turn at now_ms (the run's clock); returns the clock time to wake
  // at if nothing is read before (infinite: only a datagram or a signal wakes it).
  using Turn = std::function<double(double now_ms)>;

  void on_readable(int fd, Reader reader);

  // Turns until a stop signal arrives or the clock reaches stop_ms (infinite: never).
  // Each turn calls the readers of the descriptors that became readable (every
  // reader on the first turn), then `turn`, then sleeps until the wake time it
  // returned, stop_ms, a readable descriptor or a signal, whichever is first.
  void run(const MsClock& clock, const StopSignals& signals, double stop_ms, const Turn& turn);

 private:
  std::vector<pollfd> fds_;
  std::vector<Reader> readers_;
};

}  // namespace ccgym::net
