// ccgym-sender: runs one congestion-control scheme over UDP under the same
// SenderModel as the simulator, driven by the wall clock (steady ms since start).
//
// Log (--log FILE), tab-separated, one header line, then one row per event:
//   event  flow  seq  bytes  send_ms  recv_ms  ack_ms  window
// event "send": a data datagram left (bytes on the wire; recv_ms, ack_ms nan);
// event "timeout": no ACK for the controller's timeout; the next "send" row goes
//   regardless of the window (seq: that datagram's);
// event "ack": an ACK arrived (bytes: the acked datagram's on the wire; send_ms
//   echoed, sender clock; recv_ms receiver clock; ack_ms sender clock, now).
// window: the controller's window after the event. Trailer comment lines at exit
// give clock_origin_ns and counts.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "deploy/cpp/flags.hh"
#include "deploy/cpp/net.hh"
#include "deploy/cpp/tsv_log.hh"
#include "deploy/cpp/wire.hh"
#include "emulators/cpp/delivery.hh"
#include "policies/cpp/actions.hh"
#include "policies/cpp/controller.hh"
#include "policies/cpp/policy_action.hh"
#include "policies/cpp/sender.hh"
#ifdef CCGYM_HAVE_OPENCV
#include "deploy/cpp/onnx_policy.hh"
#endif

namespace ccgym {
namespace {

constexpr int kSocketBufferBytes = 8 << 20;
constexpr const char* kLstmPrefix = "lstm:";

// How long decisions take, in 1 us buckets (the last one: that long or longer):
// a fixed array, so timing a decision allocates nothing.
class DecisionTimes {
 public:
  void add(double us) {
    const auto bucket = static_cast<std::size_t>(std::clamp(us, 0.0, double(kBuckets - 1)));
    ++counts_[bucket];
    ++total_;
  }
  uint64_t total() const { return total_; }
  // The upper edge of the bucket holding the q-quantile, us.
  double quantile_us(double q) const {
    const auto rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(total_)));
    uint64_t seen = 0;
    for (std::size_t i = 0; i < kBuckets; ++i) {
      seen += counts_[i];
      if (seen >= std::max<uint64_t>(rank, 1)) return static_cast<double>(i + 1);
    }
    return static_cast<double>(kBuckets);
  }

 private:
  static constexpr std::size_t kBuckets = 10000;
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t total_ = 0;
};

// Drives an ExternalWindow from the ONNX policy every kStepMs.
class LearnedPolicy {
 public:
#ifdef CCGYM_HAVE_OPENCV
  LearnedPolicy(const std::string& path, int hidden_size, ExternalWindow* window)
      : runner_(path, hidden_size), window_(window) {}

  // One decision from the current features at now_ms (sender clock), timed from the
  // observation to the new window.
  void step(const Features& features, double now_ms) {
    const auto start = std::chrono::steady_clock::now();
    const double current = window_->window_size();
    const int action = runner_.act(features.observation(current, previous_action_, now_ms));
    take_policy_action(features, *window_, action);
    previous_action_ = action;
    times_.add(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                   .count());
  }
  int hidden_size() const { return runner_.hidden_size(); }
  const DecisionTimes& times() const { return times_; }

 private:
  PolicyRunner runner_;
  ExternalWindow* window_;
  int previous_action_ = kHoldAction;  // before the first step: no change
  DecisionTimes times_;
#endif
};

std::string scheme_names() {
  std::string out;
  for (const SchemeInfo& info : scheme_catalog()) {
    // external: a window set from outside, which the sender's command line has no way to do.
    if (info.name != "external") out += (out.empty() ? "" : ", ") + info.name;
  }
  return out;
}

int run(int argc, char** argv) {
  net::Flags flags(
      "ccgym-sender",
      "Sends ccgym data datagrams under a congestion-control scheme and logs sends and ACKs.",
      {{"dest", "HOST:PORT", "where to send (a ccgym-receiver or ccgym-link)", "", true},
       {"scheme", "SPEC",
        "a scheme spec, e.g. fixed:10 (schemes: " + scheme_names() + "), or lstm:FILE.onnx",
        "", true},
       {"duration-s", "SECONDS", "stop after this long; 0 runs until SIGINT/SIGTERM", "0"},
       {"flow", "ID", "flow id carried in every datagram", "0"},
       {"packet-bytes", "BYTES", "datagram size on the wire (UDP payload + 28)",
        std::to_string(kDataPacketBytes)},
       {"seed", "N", "seed of schemes with randomness", "1"},
       {"hidden", "N", "LSTM hidden size; 0 reads it from the ONNX file", "0"},
       {"log", "FILE", "send and ACK log (TSV)", ""}});
  flags.parse(argc, argv);

  net::Address dest;
  try {
    dest = net::Address::parse(flags.text("dest"));
  } catch (const std::invalid_argument& e) {
    flags.fail(std::string("--dest: ") + e.what());
  }
  const double duration_s = flags.number("duration-s");
  if (duration_s < 0) flags.fail("--duration-s must be >= 0");
  const double stop_ms = duration_s > 0 ? duration_s * 1000 : kNever;
  const uint64_t flow = flags.integer("flow");
  if (flow > UINT32_MAX) flags.fail("--flow must fit in 32 bits");
  const uint64_t packet_bytes = flags.integer("packet-bytes");
  if (packet_bytes < wire::kMinDataPacketBytes ||
      packet_bytes > wire::kMaxDataPayloadBytes + wire::kIpUdpHeaderBytes) {
    flags.fail("--packet-bytes must be in [" + std::to_string(wire::kMinDataPacketBytes) + ", " +
               std::to_string(wire::kMaxDataPayloadBytes + wire::kIpUdpHeaderBytes) + "]");
  }
  [[maybe_unused]] const uint64_t hidden = flags.integer("hidden");

  const std::string scheme = flags.text("scheme");
  std::unique_ptr<Controller> controller;
  std::unique_ptr<LearnedPolicy> policy;
  if (scheme.rfind(kLstmPrefix, 0) == 0) {
#ifdef CCGYM_HAVE_OPENCV
    auto window = std::make_unique<ExternalWindow>(kInitialWindow);
    const std::string model = scheme.substr(std::char_traits<char>::length(kLstmPrefix));
    try {
      policy = std::make_unique<LearnedPolicy>(model, static_cast<int>(hidden), window.get());
    } catch (const std::runtime_error& e) {
      flags.fail(std::string("--scheme: ") + e.what());
    }
    controller = std::move(window);
#else
    flags.fail("--scheme lstm: this ccgym-sender was built without OpenCV dnn");
#endif
  } else {
    try {
      controller = make_controller(scheme, flags.integer("seed"));
    } catch (const std::invalid_argument& e) {
      flags.fail(std::string("--scheme: ") + e.what());
    }
  }
  SenderModel sender(std::move(controller), static_cast<uint32_t>(flow),
                     static_cast<uint32_t>(packet_bytes), 0, stop_ms);

  net::StopSignals signals;
  net::UdpSocket socket(dest.family());
  socket.connect(dest);
  socket.set_buffer_bytes(kSocketBufferBytes);
  net::tighten_timer_slack();  // paced schemes send on sub-ms deadlines

  net::TsvLog log;
  if (!flags.text("log").empty()) {
    log.open(flags.text("log"), "event\tflow\tseq\tbytes\tsend_ms\trecv_ms\tack_ms\twindow");
  }

  // The datagram: header rewritten per send, zero padding written once.
  std::vector<unsigned char> datagram(packet_bytes - wire::kIpUdpHeaderBytes, 0);
  unsigned char ack_buffer[wire::kAckPayloadBytes];
  uint64_t sent = 0;
  uint64_t send_failures = 0;
  uint64_t acks = 0;
  uint64_t malformed = 0;
  uint64_t timeouts = 0;

  net::MsClock clock;
  const auto send_one = [&](double now_ms) {
    const uint64_t seq = sender.on_send(now_ms);
    wire::encode_data(datagram.data(), datagram.size(),
                      {static_cast<uint32_t>(flow), seq, now_ms});
    if (!socket.send(datagram.data(), datagram.size())) ++send_failures;
    ++sent;
    if (log.is_open()) {
      log.text("send").integer(flow).integer(seq).integer(packet_bytes).ms(now_ms);
      log.ms(NAN).ms(NAN).ms(sender.window()).end_row();
    }
  };

  pollfd fds[1] = {{socket.fd(), POLLIN, 0}};
  // The first decision comes before the first send, at 0, as in the simulator, where
  // the policy sets the window at the start of every step: the two then take the same
  // number of decisions before the first ACK.
  double next_step_ms = 0;
  while (!signals.requested()) {
    double now_ms = clock.now_ms();
    if (now_ms >= stop_ms) break;

    ssize_t n;
    while ((n = socket.receive(ack_buffer, sizeof ack_buffer, nullptr)) >= 0) {
      wire::Ack ack;
      // n is the datagram's full length, also when it did not fit the buffer.
      const auto length = static_cast<std::size_t>(n);
      if (length > sizeof ack_buffer || !wire::decode_ack(ack_buffer, length, ack) ||
          ack.flow != flow) {
        ++malformed;
        continue;
      }
      const double ack_ms = clock.now_ms();
      sender.on_ack(ack.seq, ack.send_ms, ack.recv_ms, ack_ms);
      ++acks;
      if (log.is_open()) {
        log.text("ack").integer(flow).integer(ack.seq);
        log.integer(ack.payload_bytes + wire::kIpUdpHeaderBytes);
        log.ms(ack.send_ms).ms(ack.recv_ms).ms(ack_ms).ms(sender.window()).end_row();
      }
    }

    now_ms = clock.now_ms();
    if (policy && now_ms >= next_step_ms) {
#ifdef CCGYM_HAVE_OPENCV
      policy->step(sender.features(), now_ms);
#endif
      // After a stall, the next decision is on the step grid, not a burst of
      // catch-up decisions on stale features.
      next_step_ms += kStepMs * std::floor((now_ms - next_step_ms) / kStepMs + 1);
    }
    if (sender.timed_out(now_ms)) {
      ++timeouts;
      if (log.is_open()) {
        log.text("timeout").integer(flow).integer(sender.next_seq()).integer(packet_bytes);
        log.ms(now_ms).ms(NAN).ms(NAN).ms(sender.window()).end_row();
      }
      send_one(now_ms);
    }
    while (sender.can_send(now_ms)) {
      send_one(now_ms);
      now_ms = clock.now_ms();
    }

    double wake_ms = std::min(sender.next_wakeup_ms(now_ms), stop_ms);
    if (policy) wake_ms = std::min(wake_ms, next_step_ms);
    net::wait(fds, 1, wake_ms - clock.now_ms(), signals);
  }

  if (log.is_open()) {
    log.comment("clock_origin_ns=" + std::to_string(clock.origin_ns()) +
                " sent=" + std::to_string(sent) + " acks=" + std::to_string(acks) +
                " timeouts=" + std::to_string(timeouts) +
                " malformed=" + std::to_string(malformed) +
                " send_failures=" + std::to_string(send_failures) +
                " refused=" + std::to_string(socket.refused()));
    if (!log.close()) std::fprintf(stderr, "ccgym-sender: could not write the whole log\n");
  }
  std::fprintf(stderr,
               "ccgym-sender: %llu datagrams sent, %llu ACKs, %llu timeouts, %llu malformed\n",
               static_cast<unsigned long long>(sent), static_cast<unsigned long long>(acks),
               static_cast<unsigned long long>(timeouts),
               static_cast<unsigned long long>(malformed));
#ifdef CCGYM_HAVE_OPENCV
  if (policy && policy->times().total() > 0) {
    std::fprintf(stderr, "ccgym-sender: policy: %llu decisions, median %.0f us, p99 %.0f us\n",
                 static_cast<unsigned long long>(policy->times().total()),
                 policy->times().quantile_us(0.5), policy->times().quantile_us(0.99));
  }
#endif
  return 0;
}

}  // namespace
}  // namespace ccgym

int main(int argc, char** argv) {
  return ccgym::net::run_program("ccgym-sender", ccgym::run, argc, argv);
}
