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
#include <string_view>
#include <vector>

#include "deploy/cpp/flags.hh"
#include "deploy/cpp/net.hh"
#include "deploy/cpp/onnx_policy.hh"
#include "deploy/cpp/poller.hh"
#include "deploy/cpp/tsv_log.hh"
#include "deploy/cpp/wire.hh"
#include "emulators/cpp/delivery.hh"
#include "policies/cpp/actions.hh"
#include "policies/cpp/controller.hh"
#include "policies/cpp/policy_action.hh"
#include "policies/cpp/sender.hh"

namespace ccgym {
namespace {

constexpr int kSocketBufferBytes = 8 << 20;
constexpr const char* kLstmPrefix = "lstm:";
constexpr std::string_view kCompeteOption = "compete=";
constexpr std::string_view kFirstOption = "first=";

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
  LearnedPolicy(const std::string& path, int hidden_size, ExternalWindow* window)
      : runner_(path, hidden_size), window_(window) {}

  // One decision from the current features at now_ms (sender clock), timed from the
  // observation to the new window.
  void step(const Features& features, double now_ms) {
    const auto start = std::chrono::steady_clock::now();
    const double current = window_->window_size();
    features.observation_into(runner_.observation_version(), current, previous_action_, now_ms,
                              observation_.data());
    const int action = runner_.act(observation_);
    take_policy_action(features, *window_, action);
    previous_action_ = action;
    times_.add(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                   .count());
  }
  int hidden_size() const { return runner_.hidden_size(); }
  const DecisionTimes& times() const { return times_; }
  const ExternalWindow& window() const { return *window_; }

 private:
  PolicyRunner runner_;
  PolicyRunner::Observation observation_{};
  ExternalWindow* window_;
  int previous_action_ = kHoldAction;  // before the first step: no change
  DecisionTimes times_;
};

net::Flags sender_flags() {
  return net::Flags(
      "ccgym-sender",
      "Sends ccgym data datagrams under a congestion-control scheme and logs sends and ACKs.",
      {{"dest", "HOST:PORT", "where to send (a ccgym-receiver or ccgym-link)", "", true},
       {"scheme", "SPEC",
        "a scheme spec, e.g. fixed:10 (schemes: " + classic_scheme_names() +
            "), or lstm:FILE.onnx[:compete=SCHEME][:first=SCHEME][:restart=1]",
        "", true},
       {"duration-s", "SECONDS", "stop after this long; 0 runs until SIGINT/SIGTERM", "0"},
       {"flow", "ID", "flow id carried in every datagram", "0"},
       {"packet-bytes", "BYTES", "datagram size on the wire (UDP payload + 28)",
        std::to_string(kDataPacketBytes)},
       {"seed", "N", "seed of schemes with randomness", "1"},
       {"hidden", "N", "LSTM hidden size; 0 reads it from the ONNX file", "0"},
       {"log", "FILE", "send and ACK log (TSV)", ""}});
}

struct Options {
  net::Address dest;
  double stop_ms = kNever;  // sender clock
  uint32_t flow = 0;
  uint32_t packet_bytes = kDataPacketBytes;
  std::string log_path;  // empty: no log
};

Options parse_options(const net::Flags& flags) {
  Options options;
  try {
    options.dest = net::Address::parse(flags.text("dest"));
  } catch (const std::invalid_argument& e) {
    flags.fail(std::string("--dest: ") + e.what());
  }
  const double duration_s = flags.number("duration-s");
  if (duration_s < 0) flags.fail("--duration-s must be >= 0");
  if (duration_s > 0) options.stop_ms = duration_s * 1000;
  const uint64_t flow = flags.integer("flow");
  if (flow > UINT32_MAX) flags.fail("--flow must fit in 32 bits");
  options.flow = static_cast<uint32_t>(flow);
  const uint64_t packet_bytes = flags.integer("packet-bytes");
  if (packet_bytes < wire::kMinDataPacketBytes ||
      packet_bytes > wire::kMaxDataPayloadBytes + wire::kIpUdpHeaderBytes) {
    flags.fail("--packet-bytes must be in [" + std::to_string(wire::kMinDataPacketBytes) + ", " +
               std::to_string(wire::kMaxDataPayloadBytes + wire::kIpUdpHeaderBytes) + "]");
  }
  options.packet_bytes = static_cast<uint32_t>(packet_bytes);
  options.log_path = flags.text("log");
  return options;
}

// The --scheme's controller; for lstm:FILE an ExternalWindow that *policy drives.
std::unique_ptr<Controller> make_scheme(const net::Flags& flags,
                                        std::unique_ptr<LearnedPolicy>* policy) {
  const std::string scheme = flags.text("scheme");
  const uint64_t hidden = flags.integer("hidden");
  if (scheme.rfind(kLstmPrefix, 0) == 0) {
    auto window = std::make_unique<ExternalWindow>(kInitialWindow);
    std::string model = scheme.substr(std::char_traits<char>::length(kLstmPrefix));
    // lstm:FILE.onnx[:compete=SCHEME][:first=SCHEME][:restart=0|1], in any order: classic
    // schemes underneath, the competitive mode (ExternalWindow::compete_with).
    std::string classic, first;
    bool restart = false;
    for (std::size_t colon = model.rfind(':');
         colon != std::string::npos && model.find('=', colon) != std::string::npos;
         model.resize(colon), colon = model.rfind(':')) {
      const std::string option = model.substr(colon + 1);
      if (option.rfind(kCompeteOption, 0) == 0) {
        classic = option.substr(kCompeteOption.size());
      } else if (option.rfind(kFirstOption, 0) == 0) {
        first = option.substr(kFirstOption.size());
      } else if (option == "restart=1" || option == "restart=0") {
        restart = option == "restart=1";
      } else {
        flags.fail("--scheme: unknown option '" + option +
                   "' (valid: compete=SCHEME, first=SCHEME, restart=0|1)");
      }
    }
    if (!first.empty() && classic.empty()) flags.fail("--scheme: first= needs compete=SCHEME");
    if (!classic.empty()) {
      const uint64_t seed = flags.integer("seed");
      const auto maker = [&flags, seed](const std::string& key, const std::string& spec) {
        try {
          return classic_maker(spec, seed);
        } catch (const std::invalid_argument& e) {
          flags.fail("--scheme: " + key + "=" + spec + ": " + e.what());
        }
      };
      window->compete_with(maker("compete", classic), restart,
                           first.empty() ? nullptr : maker("first", first));
    }
    try {
      *policy = std::make_unique<LearnedPolicy>(model, static_cast<int>(hidden), window.get());
    } catch (const std::runtime_error& e) {
      flags.fail(std::string("--scheme: ") + e.what());
    }
    return window;
  }
  try {
    return make_controller(scheme, flags.integer("seed"));
  } catch (const std::invalid_argument& e) {
    flags.fail(std::string("--scheme: ") + e.what());
  }
}

// One flow's sending side over a connected UDP socket: sends what the SenderModel
// allows, feeds it the ACKs, steps the learned policy, and logs every event.
class UdpSender {
 public:
  UdpSender(const Options& options, std::unique_ptr<Controller> controller,
            std::unique_ptr<LearnedPolicy> policy, net::UdpSocket* socket, net::TsvLog* log,
            const net::MsClock* clock)
      : options_(options),
        sender_(std::move(controller), options.flow, options.packet_bytes, 0, options.stop_ms,
                /*keep_features=*/policy != nullptr),
        policy_(std::move(policy)),
        socket_(socket),
        log_(log),
        clock_(clock),
        // The header is rewritten per send, the zero padding written once.
        datagram_(options.packet_bytes - wire::kIpUdpHeaderBytes, 0) {}

  void drain_acks() {
    ssize_t n;
    while ((n = socket_->receive(ack_buffer_, sizeof ack_buffer_, nullptr)) >= 0) {
      wire::Ack ack;
      // n is the datagram's full length, also when it did not fit the buffer.
      const auto length = static_cast<std::size_t>(n);
      if (length > sizeof ack_buffer_ || !wire::decode_ack(ack_buffer_, length, ack) ||
          ack.flow != options_.flow) {
        ++malformed_;
        continue;
      }
      const double ack_ms = clock_->now_ms();
      sender_.on_ack(ack.seq, ack.send_ms, ack.recv_ms, ack_ms);
      ++acks_;
      if (log_->is_open()) {
        log_->text("ack").integer(options_.flow).integer(ack.seq);
        log_->integer(ack.payload_bytes + wire::kIpUdpHeaderBytes);
        log_->ms(ack.send_ms).ms(ack.recv_ms).ms(ack_ms).ms(sender_.window()).end_row();
      }
    }
  }

  // Decides, sends what the window and pacing allow; returns when to wake.
  double turn(double now_ms) {
    if (policy_ && now_ms >= next_step_ms_) {
      policy_->step(sender_.features(), now_ms);
      // After a stall, the next decision is on the step grid, not a burst of
      // catch-up decisions on stale features.
      next_step_ms_ += kStepMs * std::floor((now_ms - next_step_ms_) / kStepMs + 1);
    }
    if (sender_.timed_out(now_ms)) {
      ++timeouts_;
      if (log_->is_open()) {
        log_->text("timeout").integer(options_.flow).integer(sender_.next_seq());
        log_->integer(options_.packet_bytes).ms(now_ms).ms(NAN).ms(NAN).ms(sender_.window());
        log_->end_row();
      }
      send_one(now_ms);
    }
    while (sender_.can_send(now_ms)) {
      send_one(now_ms);
      now_ms = clock_->now_ms();
    }
    const double wake_ms = sender_.next_wakeup_ms(now_ms);
    return policy_ ? std::min(wake_ms, next_step_ms_) : wake_ms;
  }

  void summarize() const;

 private:
  void send_one(double now_ms) {
    const uint64_t seq = sender_.on_send(now_ms);
    wire::encode_data(datagram_.data(), datagram_.size(), {options_.flow, seq, now_ms});
    if (!socket_->send(datagram_.data(), datagram_.size())) ++send_failures_;
    ++sent_;
    if (log_->is_open()) {
      log_->text("send").integer(options_.flow).integer(seq).integer(options_.packet_bytes);
      log_->ms(now_ms).ms(NAN).ms(NAN).ms(sender_.window()).end_row();
    }
  }

  Options options_;
  SenderModel sender_;
  std::unique_ptr<LearnedPolicy> policy_;
  net::UdpSocket* socket_;
  net::TsvLog* log_;
  const net::MsClock* clock_;
  std::vector<unsigned char> datagram_;
  unsigned char ack_buffer_[wire::kAckPayloadBytes];
  // The first decision comes before the first send, at 0, as in the simulator, where
  // the policy sets the window at the start of every step: the two then take the same
  // number of decisions before the first ACK.
  double next_step_ms_ = 0;
  uint64_t sent_ = 0;
  uint64_t send_failures_ = 0;
  uint64_t acks_ = 0;
  uint64_t malformed_ = 0;
  uint64_t timeouts_ = 0;
};

// The log's trailer and the lines on stderr.
void UdpSender::summarize() const {
  if (log_->is_open()) {
    log_->comment("clock_origin_ns=" + std::to_string(clock_->origin_ns()) +
                  " sent=" + std::to_string(sent_) + " acks=" + std::to_string(acks_) +
                  " timeouts=" + std::to_string(timeouts_) +
                  " malformed=" + std::to_string(malformed_) +
                  " send_failures=" + std::to_string(send_failures_) +
                  " refused=" + std::to_string(socket_->refused()));
    if (!log_->close()) std::fprintf(stderr, "ccgym-sender: could not write the whole log\n");
  }
  std::fprintf(stderr,
               "ccgym-sender: %llu datagrams sent, %llu ACKs, %llu timeouts, %llu malformed\n",
               static_cast<unsigned long long>(sent_), static_cast<unsigned long long>(acks_),
               static_cast<unsigned long long>(timeouts_),
               static_cast<unsigned long long>(malformed_));
  if (policy_ && policy_->times().total() > 0) {
    std::fprintf(stderr, "ccgym-sender: policy: %llu decisions, median %.0f us, p99 %.0f us\n",
                 static_cast<unsigned long long>(policy_->times().total()),
                 policy_->times().quantile_us(0.5), policy_->times().quantile_us(0.99));
  }
  if (policy_ && policy_->window().can_compete()) {
    const ExternalWindow& window = policy_->window();
    std::fprintf(stderr,
                 "ccgym-sender: competitive mode: %llu of %llu decisions; the link's rate "
                 "from packet pairs %.1f Mbit/s%s\n",
                 static_cast<unsigned long long>(window.competing_decisions()),
                 static_cast<unsigned long long>(window.decisions()),
                 window.share_meter().capacity_mbps(),
                 window.has_first_classic()
                     ? (window.using_first_classic() ? "; under the first classic"
                                                     : "; under compete='s classic")
                     : "");
  }
}

int run(int argc, char** argv) {
  net::Flags flags = sender_flags();
  flags.parse(argc, argv);
  const Options options = parse_options(flags);
  std::unique_ptr<LearnedPolicy> policy;
  std::unique_ptr<Controller> controller = make_scheme(flags, &policy);

  net::StopSignals signals;
  net::UdpSocket socket(options.dest.family());
  socket.connect(options.dest);
  socket.set_buffer_bytes(kSocketBufferBytes);
  net::tighten_timer_slack();  // paced schemes send on sub-ms deadlines
  net::TsvLog log;
  if (!options.log_path.empty()) {
    log.open(options.log_path, "event\tflow\tseq\tbytes\tsend_ms\trecv_ms\tack_ms\twindow");
  }

  net::MsClock clock;
  UdpSender sender(options, std::move(controller), std::move(policy), &socket, &log, &clock);
  net::Poller poller;
  poller.on_readable(socket.fd(), [&] { sender.drain_acks(); });
  poller.run(clock, signals, options.stop_ms, [&](double now_ms) { return sender.turn(now_ms); });
  sender.summarize();
  return 0;
}

}  // namespace
}  // namespace ccgym

int main(int argc, char** argv) {
  return ccgym::net::run_program("ccgym-sender", ccgym::run, argc, argv);
}
