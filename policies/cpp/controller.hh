// The congestion-control contract, after the 6.829 contest's datagrump: the
// sender does the bookkeeping, the controller only decides. Every timestamp is in
// milliseconds; "sender clock" and "receiver clock" are the two endpoints' clocks
// (the same clock in the simulator, possibly unsynchronized on a real path).
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "policies/cpp/share_meter.hh"

namespace ccgym {

// The scheme of a flow whose window is set from outside (ExternalWindow): the learned
// policy's, the oracle's, Python's. Every other scheme is a classic one, deciding alone.
inline constexpr std::string_view kExternalScheme = "external";

class Controller {
 public:
  virtual ~Controller() = default;

  // Packets the sender may have in flight (unacknowledged) now; at least 1 is used.
  virtual double window_size() = 0;

  // A datagram was sent. send_ms: sender clock.
  virtual void on_sent(uint64_t seq, double send_ms) { (void)seq; (void)send_ms; }

  // An ACK arrived. send_ms: sender clock, when the acked datagram was sent;
  // recv_ms: receiver clock, when it arrived there; ack_ms: sender clock, now.
  // ACKs of a lost datagram never come: a jump in seq tells of the loss.
  virtual void on_ack(uint64_t seq, double send_ms, double recv_ms, double ack_ms) = 0;

  // How long (ms) without an ACK before the sender sends one datagram regardless
  // of the window and calls on_timeout().
  virtual double timeout_ms() { return 1000; }
  virtual void on_timeout(double now_ms) { (void)now_ms; }

  // Pacing rate in Mbit/s; 0 sends as soon as the window allows.
  virtual double pacing_rate_mbps() { return 0; }

  // Packets sent back to back at each paced send, the schedule then waiting that many packet
  // times (a kernel's TSO/GSO burst: bbr's); 1 paces packet by packet. Only with pacing.
  virtual double send_quantum_packets() { return 1; }

  virtual std::string name() const = 0;
};

// The values a scheme parameter accepts: lo..hi, each end open or closed, an
// infinite end unbounded. Declared once in the catalog: the factory checks every
// parameter against it and `ccgym schemes` prints it.
struct ParamRange {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false;
  bool hi_open = false;

  bool contains(double value) const;
  // "> 0", ">= 1", "in (0, 1)", "in [1, 20000]", "any number".
  std::string to_string() const;
};

// A scheme parameter: name, default, meaning and valid range, for --help, `ccgym
// schemes` and error messages.
struct SchemeParam {
  std::string name;
  double value;
  std::string help;
  ParamRange range;
};

struct SchemeInfo {
  std::string name;
  std::string summary;
  std::vector<SchemeParam> params;
};

// Builds a controller from "name", "name:value" (the first parameter, e.g. fixed:20)
// or "name:key=value:key=value". Throws std::invalid_argument on an unknown scheme
// or parameter, listing the valid ones. seed drives schemes with randomness.
std::unique_ptr<Controller> make_controller(const std::string& spec, uint64_t seed = 1);
std::vector<SchemeInfo> scheme_catalog();
// Checks `spec` as make_controller() does, and that it names a classic scheme (not
// kExternalScheme): what may compete beside a learned flow. Throws std::invalid_argument.
void check_classic_scheme(const std::string& spec);
// The classic schemes' names, "fixed, aimd, ...": what a user may name (external is accepted
// but never offered: alone it is a fixed window).
std::string classic_scheme_names();

// A window set from outside (the learned policy, the oracle, Python): the
// controller that policies which act every 10 ms drive.
//
// It may hold a classic controller underneath (compete_with), after Orca's classic window
// under the agent: that controller sees every send, ACK and timeout of the flow, whichever
// window is in use, so it is ready when it takes over. In competitive mode (set_competing;
// policy_action.hh's update_competitive_mode decides, by Copa's drain test) the flow sends
// under the classic's window and pacing instead of the policy's, to hold a share beside a
// buffer filler that a delay-keeping policy would yield to.
class ExternalWindow final : public Controller {
 public:
  explicit ExternalWindow(double window = 10) : window_(window) {}
  void set_window(double window) { window_ = window; }
  double window_size() override {
    return competing_ ? std::min(active().window_size(), classic_ceiling_) : window_;
  }
  void on_sent(uint64_t seq, double send_ms) override {
    if (classic_) classic_->on_sent(seq, send_ms);
    if (first_classic_) first_classic_->on_sent(seq, send_ms);
  }
  void on_ack(uint64_t seq, double send_ms, double recv_ms, double ack_ms) override {
    if (classic_) {
      classic_->on_ack(seq, send_ms, recv_ms, ack_ms);
      share_meter_.on_ack(seq, send_ms, recv_ms, ack_ms);
    }
    if (first_classic_) first_classic_->on_ack(seq, send_ms, recv_ms, ack_ms);
  }
  double timeout_ms() override {
    return competing_ ? active().timeout_ms() : Controller::timeout_ms();
  }
  void on_timeout(double now_ms) override {
    if (classic_) classic_->on_timeout(now_ms);
    if (first_classic_) first_classic_->on_timeout(now_ms);
  }
  double pacing_rate_mbps() override { return competing_ ? active().pacing_rate_mbps() : 0; }
  std::string name() const override { return std::string(kExternalScheme); }
  // The newest ACK's time (sender clock) when a learned policy last grew the window, so that
  // it grows once per ACK at most (growth_ceiling in actions.hh); -infinity before.
  double grown_at_ack_ms() const { return grown_at_ack_ms_; }
  void note_growth(double newest_ack_ms) { grown_at_ack_ms_ = newest_ack_ms; }

  // Makes the classic controller (make_controller with its spec and seed).
  using ClassicMaker = std::function<std::unique_ptr<Controller>()>;
  // Puts a classic controller underneath, from the flow's start on. restart_on_entry: made
  // afresh on each entry into competitive mode instead. The classic fed while the policy
  // drove has measured the policy's small share: bbr's bandwidth estimate then grows by a
  // quarter per 8-RTT cycle, where a fresh bbr's startup finds its share within a few RTTs
  // (the generalist beside bbr on shared-bottleneck's links, 60 s: 0.13-0.38 with a fresh
  // bbr, 0.10-0.19 with a fed one); a fresh cubic's slow start, though, ends in a loss and a
  // cut each time (beside cubic: 0.20-0.46 fresh, 0.35-0.56 fed). bench_coexist.py --only pair.
  //
  // make_first, when given, makes a second classic, fed from the start on too, that takes over
  // first (a loss-based one, cubic: it shares with loss-based buffer fillers); make_classic's
  // takes over from it on switch_classic() (a competitor that starves it does not back off on
  // loss: bbr), and stays for the entries that follow within a while of leaving
  // (set_competing).
  void compete_with(ClassicMaker make_classic, bool restart_on_entry = false,
                    ClassicMaker make_first = nullptr) {
    make_classic_ = std::move(make_classic);
    restart_on_entry_ = restart_on_entry;
    classic_ = make_classic_();
    first_classic_ = make_first ? make_first() : nullptr;
    using_first_ = first_classic_ != nullptr;
  }
  bool has_first_classic() const { return first_classic_ != nullptr; }
  // Whether the mode sends (or will, on entry) under the first classic.
  bool using_first_classic() const { return using_first_; }
  // Hands the mode to the other classic (needs a first one): make_classic's afresh under
  // restart_on_entry, the first one as fed all along.
  void switch_classic() {
    if (first_classic_) hand_to(!using_first_);
  }
  // The flow's share of its bottleneck, read while a classic is underneath.
  const ShareMeter& share_meter() const { return share_meter_; }
  bool can_compete() const { return classic_ != nullptr; }
  bool competing() const { return competing_; }
  // Enters or leaves competitive mode (needs compete_with); the policy's window is then
  // set_window's (update_competitive_mode restarts it on leaving).
  // reentry: the flow left the mode a short while ago (CompeteRule::reenter_within_ms), so
  // the competitor is the one it met then, and the classic it had switched to still holds.
  void set_competing(bool on, bool reentry = false) {
    if (on && !competing_ && classic_) hand_to(reentry ? using_first_ : first_classic_ != nullptr);
    competing_ = on && classic_ != nullptr;
  }
  // Since when (ACK time) the flow's share has asked for the other classic; NaN while not.
  double switch_asked_ms() const { return switch_asked_ms_; }
  void set_switch_asked_ms(double ack_ms) { switch_asked_ms_ = ack_ms; }
  // The most the classic's window may be in competitive mode. A classic that has not driven
  // grows on the policy's ACKs without its window ever limiting the flow (cubic's slow start
  // never ends where nothing is lost), so its window can be far above what the path carries:
  // update_competitive_mode keeps this at the policy's growth ceiling, at most a doubling of
  // the measured flight per RTT, as slow start grows.
  void set_classic_ceiling(double window) { classic_ceiling_ = window; }
  // The ACK time (sender clock) since which the drain test has asked for the other mode;
  // NaN while it agrees with the mode the flow is in.
  double mode_change_asked_ms() const { return mode_change_asked_ms_; }
  void set_mode_change_asked_ms(double ack_ms) { mode_change_asked_ms_ = ack_ms; }
  // The ACK time (sender clock) at which the flow last left competitive mode; -infinity
  // before it has.
  double left_mode_at_ms() const { return left_mode_at_ms_; }
  void set_left_mode_at_ms(double ack_ms) { left_mode_at_ms_ = ack_ms; }
  // Whether the flow has left the mode on its share (CompeteRule::share_ceiling: nothing
  // filled the buffer), after which it enters again only when starved.
  bool held_link() const { return held_link_; }
  void set_held_link() { held_link_ = true; }
  // Decisions taken (update_competitive_mode calls) in all and in competitive mode.
  uint64_t decisions() const { return decisions_; }
  uint64_t competing_decisions() const { return competing_decisions_; }
  void count_decision() {
    ++decisions_;
    if (competing_) ++competing_decisions_;
  }

 private:
  // The classic the mode sends under.
  Controller& active() const { return using_first_ ? *first_classic_ : *classic_; }
  // Gives the mode to the first classic or to make_classic's (afresh under restart_on_entry).
  void hand_to(bool first) {
    using_first_ = first;
    if (!first && restart_on_entry_) classic_ = make_classic_();
  }

  double window_;
  double grown_at_ack_ms_ = -std::numeric_limits<double>::infinity();
  ClassicMaker make_classic_;
  bool restart_on_entry_ = false;
  std::unique_ptr<Controller> classic_;
  std::unique_ptr<Controller> first_classic_;
  bool using_first_ = false;
  ShareMeter share_meter_;
  double switch_asked_ms_ = std::numeric_limits<double>::quiet_NaN();
  bool competing_ = false;
  double classic_ceiling_ = std::numeric_limits<double>::infinity();
  double mode_change_asked_ms_ = std::numeric_limits<double>::quiet_NaN();
  double left_mode_at_ms_ = -std::numeric_limits<double>::infinity();
  bool held_link_ = false;
  uint64_t decisions_ = 0;
  uint64_t competing_decisions_ = 0;
};

// Checks `spec` (check_classic_scheme) and returns what makes that classic, seeded, for
// ExternalWindow::compete_with. Throws std::invalid_argument.
ExternalWindow::ClassicMaker classic_maker(const std::string& spec, uint64_t seed);

}  // namespace ccgym
