#include "deploy/cpp/poller.hh"

#include <algorithm>
#include <utility>

namespace ccgym::net {

void Poller::on_readable(int fd, Reader reader) {
  fds_.push_back({fd, POLLIN, 0});
  readers_.push_back(std::move(reader));
}

void Poller::run(const MsClock& clock, const StopSignals& signals, double stop_ms,
                 const Turn& turn) {
  bool first = true;
  while (!signals.requested() && clock.now_ms() < stop_ms) {
    for (std::size_t i = 0; i < fds_.size(); ++i) {
      // An error or hang-up is read too: the reader's receive reports and skips it.
      if (first || fds_[i].revents != 0) readers_[i]();
      fds_[i].revents = 0;
    }
    first = false;
    const double wake_ms = std::min(turn(clock.now_ms()), stop_ms);
    wait(fds_.data(), static_cast<nfds_t>(fds_.size()), wake_ms - clock.now_ms(), signals);
  }
}

}  // namespace ccgym::net
