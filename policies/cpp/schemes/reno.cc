// reno: Linux's Reno (tcp_cong.c's tcp_reno_cong_avoid and tcp_reno_ssthresh; RFC 5681), the
// kernel's fallback scheme: slow start up to ssthresh, then one packet more per RTT (1/window
// per ACK); a loss event halves the window (at least 2), a timeout restarts slow start from 1
// with ssthresh half the window. It fills a droptail buffer until it drops, as cubic does, and
// climbs back more slowly on long paths. Slow start, loss events and the timeouts are Linux's
// TCP's (linux_tcp.hh). Where `aimd` is the contest's exercise (no slow start), this is the
// Reno kernel TCP runs (`kernel:reno` through the link shell).
#include "policies/cpp/schemes/linux_tcp.hh"

namespace ccgym::schemes {
namespace {

class Reno final : public LinuxTcpWindow {
 public:
  explicit Reno(bool linux_rto) : LinuxTcpWindow(linux_rto) {}
  std::string name() const override { return "reno"; }

 private:
  void on_loss() override {
    cwnd_ = clamp_window(std::max(cwnd_ * kBeta, 2.0));
    ssthresh_ = cwnd_;
  }
  void congestion_avoidance(double /*ack_ms*/) override {
    cwnd_ = clamp_window(cwnd_ + 1 / cwnd_);
  }
  void cut_on_timeout() override {
    ssthresh_ = std::max(cwnd_ * kBeta, 2.0);
    cwnd_ = 1;
  }

  static constexpr double kBeta = 0.5;
};

std::unique_ptr<Controller> make(const Params& params, uint64_t) {
  return std::make_unique<Reno>(param(params, "linux_rto") != 0);
}

}  // namespace

SchemeEntry reno_scheme() {
  return {{"reno",
           "Linux's Reno: slow start, one packet more per RTT, halved on loss; fills the buffer",
           {{"linux_rto", 1,
             "1: Linux's timeouts: its RTO (at least srtt + 200 ms), a tail loss probe "
             "first, a spurious timeout undone; 0: RFC 6298's RTO",
             in_closed(0, 1)}}},
          &make};
}

}  // namespace ccgym::schemes
