#include "emulators/cpp/simulator.hh"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <mutex>

#include "common/cpp/format.hh"
#include "common/cpp/splitmix.hh"
#include "emulators/cpp/step_workers.hh"

namespace ccgym {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Each flow's start: as asked, and a draw of [0, spread_ms) later where another flow is asked
// to start at the same instant (kTogetherStartSpreadMs).
std::vector<double> start_times_ms(const std::vector<FlowSpec>& flows, uint64_t seed,
                                   double spread_ms) {
  // Every flow draws, together or not, so that a flow's offset depends on its index and the
  // seed alone. Mixed once: derived seeds of consecutive seeds are consecutive states of
  // splitmix's stream, which would make seed s's second draw seed s + 1's first.
  uint64_t state = splitmix64_mix(derive_seed(seed, kStartOffsetPart));
  std::vector<double> starts;
  for (const FlowSpec& f : flows) {
    const double offset_ms = spread_ms * splitmix64_uniform(state);
    const auto together = std::count_if(flows.begin(), flows.end(), [&](const FlowSpec& g) {
      return g.start_ms == f.start_ms;
    });
    starts.push_back(together > 1 ? f.start_ms + offset_ms : f.start_ms);
  }
  return starts;
}

// Where the receivers' ACK records go: into the ACK direction.
auto into(LinkDirection& acks) {
  return [&acks](const Packet& ack, double at_ms) { acks.send(ack, at_ms); };
}
}  // namespace

double shared_ack_jitter_ms(const LinkSpec& link) {
  return mean_rate_mbps(link.data) > 0 ? kSharedAckJitterMs : 0;
}

uint64_t derive_seed(uint64_t seed, uint64_t part) { return seed * 0x9E3779B97F4A7C15ull + part; }

void PacketLog::clear() {
  flow.clear();
  seq.clear();
  bytes.clear();
  send_ms.clear();
  arrival_ms.clear();
  dropped.clear();
}

Simulator::Simulator(const LinkSpec& link, const std::vector<FlowSpec>& flows, uint64_t seed,
                     bool record_log, double start_spread_ms)
    : link_(link), record_log_(record_log), seed_(seed) {
  if (flows.empty()) throw std::invalid_argument("a simulation needs at least one flow");
  if (!(start_spread_ms >= 0 && std::isfinite(start_spread_ms))) {
    throw std::invalid_argument("start_spread_ms must be finite and >= 0, got " +
                                format_number(start_spread_ms));
  }
  start_ms_ = start_times_ms(flows, seed, start_spread_ms);
  if (flows.size() > 1 && !link_.ack.jitter_ms) link_.ack.jitter_ms = shared_ack_jitter_ms(link);
  const bool delayed_acks = link.delayed_acks.value_or(flows.size() > 1);
  data_ = make_direction(link.data, link.delay_ms, link.once, derive_seed(seed, kDataDirectionPart));
  ack_ = make_direction(link_.ack, link.delay_ms, link.once, derive_seed(seed, kAckDirectionPart));
  data_->record_opportunities(record_log);
  // The data direction needs no pass of the event loop of its own: a packet's departure and
  // its arrival at the receiver change nothing a sender sees until its ACK comes back, one
  // ACK path later at the soonest, or a held ACK's timer runs out. A pass handles every
  // arrival since the last in arrival order, each at its own time (deliver_data), which gives
  // the same sends, ACKs and times as a pass at each. Not where the ACK direction has a rate:
  // its queue takes the ACKs in the order they are sent, so each must be sent in its pass.
  data_slack_ms_ = ack_->unlimited() ? std::min(ack_->delay_ms(), TcpReceiver::kDelayedAckMs)
                                     : kNever;
  for (std::size_t i = 0; i < flows.size(); ++i) {
    const FlowSpec& f = flows[i];
    auto controller = make_controller(f.scheme, derive_seed(seed, kFirstFlowPart + i));
    auto* external = dynamic_cast<ExternalWindow*>(controller.get());
    senders_.push_back(std::make_unique<SenderModel>(std::move(controller),
                                                     static_cast<uint32_t>(i), f.packet_bytes,
                                                     start_ms_[i], f.stop_ms,
                                                     /*keep_features=*/external != nullptr));
    externals_.push_back(external);
    // The learned flow's receiver is ccgym's, which answers every datagram.
    receivers_.emplace_back(delayed_acks && external == nullptr, link.delay_ms);
  }
  step_stats_.resize(flows.size());
}

void Simulator::compete(std::size_t flow, const std::string& spec, bool restart_on_entry,
                        const std::string& first_spec) {
  if (flow >= externals_.size() || externals_[flow] == nullptr) {
    throw std::invalid_argument("flow " + std::to_string(flow) + " is not external");
  }
  const uint64_t seed = derive_seed(seed_, kFirstFlowPart + flow);
  externals_[flow]->compete_with(classic_maker(spec, seed), restart_on_entry,
                                 first_spec.empty() ? nullptr : classic_maker(first_spec, seed));
}

double Simulator::min_rtt_ms() const {
  // One serialization of a data packet at the link's mean rate is not known in
  // general; twice the propagation delay is the floor every packet pays.
  return 2 * link_.delay_ms;
}

std::size_t Simulator::active_flows() const {
  std::size_t n = 0;
  for (const auto& sender : senders_) n += sender->active(now_ms_) ? 1 : 0;
  return n;
}

void Simulator::clear_step_stats() {
  for (auto& s : step_stats_) s.clear();
}

void Simulator::deliver_data(double now_ms) {
  data_->advance(now_ms);
  for (const auto& drop : data_->dropped()) {
    if (record_log_) log_.dropped[drop.tag] = 1;
    step_stats_[drop.flow].drops++;
  }
  data_->clear_dropped();
  if (data_->arrivals().empty()) return;
  ack_->advance(now_ms);
  for (const auto& arrival : data_->arrivals()) {
    const Packet& p = arrival.packet;
    const double delay = arrival.arrival_ms - p.sent_ms;
    StepStats& stats = step_stats_[p.flow];
    stats.delivered_bytes += p.bytes;
    stats.delay_sum_ms += delay;
    stats.delay_max_ms = std::max(stats.delay_max_ms, delay);
    stats.arrivals++;
    if (record_log_) log_.arrival_ms[p.tag] = arrival.arrival_ms;
    Packet ack = p;
    ack.bytes = kAckPacketBytes;
    ack.recv_ms = arrival.arrival_ms;
    receivers_[p.flow].on_arrival(ack, arrival.arrival_ms, into(*ack_));
  }
  data_->clear_arrivals();
  ack_->clear_dropped();  // lost ACKs simply never arrive
}

void Simulator::send_held_acks(double now_ms) {
  if (next_held_ack_ms_ > now_ms) return;
  ack_->advance(now_ms);
  for (auto& receiver : receivers_) receiver.on_timer(now_ms, into(*ack_));
}

void Simulator::deliver_acks(double now_ms) {
  ack_->advance(now_ms);
  for (const auto& arrival : ack_->arrivals()) {
    const Packet& a = arrival.packet;
    senders_[a.flow]->on_ack(a.seq, a.sent_ms, a.recv_ms, arrival.arrival_ms);
  }
  ack_->clear_arrivals();
  ack_->clear_dropped();
}

void Simulator::send_what_is_allowed(double now_ms) {
  for (auto& sender : senders_) {
    bool force = sender->timed_out(now_ms);
    while (force || sender->can_send(now_ms)) {
      force = false;
      Packet p;
      p.flow = sender->flow();
      p.bytes = sender->packet_bytes();
      p.sent_ms = now_ms;
      p.seq = sender->on_send(now_ms);
      if (record_log_) {
        p.tag = log_.size();
        log_.flow.push_back(static_cast<int32_t>(p.flow));
        log_.seq.push_back(static_cast<int64_t>(p.seq));
        log_.bytes.push_back(static_cast<int32_t>(p.bytes));
        log_.send_ms.push_back(now_ms);
        log_.arrival_ms.push_back(kNaN);
        log_.dropped.push_back(0);
      }
      if (!data_->send(p, now_ms)) {
        if (record_log_) log_.dropped[p.tag] = 1;
        step_stats_[p.flow].drops++;
        data_->clear_dropped();
      }
    }
  }
}

double Simulator::next_event_ms() {
  double next = std::min(data_slack_ms_ == kNever
                             ? data_->next_event_ms()
                             : data_->next_arrival_bound_ms() + data_slack_ms_,
                         ack_->next_event_ms());
  next_held_ack_ms_ = kNever;
  for (std::size_t flow = 0; flow < senders_.size(); ++flow) {
    next = std::min(next, senders_[flow]->next_wakeup_ms(now_ms_));
    next_held_ack_ms_ = std::min(next_held_ack_ms_, receivers_[flow].next_due_ms());
  }
  return std::min(next, next_held_ack_ms_);
}

void Simulator::run_until(double until_ms) {
  // Each pass handles everything due at one instant, in the order a packet
  // would see it: the link moves, ACKs reach senders, senders react.
  for (;;) {
    const double t = std::max(now_ms_, next_event_ms());
    if (t > until_ms) break;
    now_ms_ = t;
    deliver_data(t);
    send_held_acks(t);
    deliver_acks(t);
    send_what_is_allowed(t);
  }
  now_ms_ = until_ms;
  // Keep the capacity record up to date even when the link sat idle.
  deliver_data(until_ms);
  deliver_acks(until_ms);
}

namespace {

// Threads that stay alive between calls: an environment steps its links every 10 ms of
// virtual time, and starting threads for each step cost more than the step itself. Each
// participant takes the next simulation not yet taken until none is left (runs differ in
// length); the caller takes part, and never waits for a worker that has not started
// (step_workers.hh), so a call is never much slower than running them all itself.
class SharedStepper {
 public:
  explicit SharedStepper(int threads)
      : workers_(threads, /*chunks_per_thread=*/1, [this](int part) { work(part); }) {}
  int threads() const { return workers_.threads(); }
  bool usable() const { return workers_.usable(); }

  void run(std::vector<Simulator*>& sims, double until_ms, int participants) {
    sims_ = &sims;
    until_ms_ = until_ms;
    participants_ = participants;
    next_.store(0, std::memory_order_relaxed);
    workers_.run();  // publishes the fields above to the workers
    sims_ = nullptr;
  }

 private:
  void work(int part) {
    if (part >= participants_) return;  // the caller asked for fewer threads
    const std::size_t n = sims_->size();
    for (std::size_t i = next_++; i < n; i = next_++) (*sims_)[i]->run_until(until_ms_);
  }

  std::vector<Simulator*>* sims_ = nullptr;
  double until_ms_ = 0;
  int participants_ = 1;
  std::atomic<std::size_t> next_{0};
  StepWorkers workers_;  // last: its threads start once the fields above exist
};

std::mutex stepper_mutex;  // one call at a time uses the shared threads

SharedStepper& shared_stepper() {
  static const int threads = usable_cores();
  // A forked child has none of the parent's threads: it gets threads of its own (the
  // parent's stepper is left alone, not destroyed, since its threads are not here).
  static SharedStepper* stepper = new SharedStepper(threads);
  if (!stepper->usable()) stepper = new SharedStepper(threads);
  return *stepper;
}

}  // namespace

void run_all_until(std::vector<Simulator*>& sims, double until_ms, int threads) {
  const int n = static_cast<int>(sims.size());
  if (threads <= 0) threads = usable_cores();
  threads = std::max(1, std::min(threads, n));
  if (threads == 1) {
    for (auto* sim : sims) sim->run_until(until_ms);
    return;
  }
  std::lock_guard<std::mutex> lock(stepper_mutex);
  shared_stepper().run(sims, until_ms, threads);
}

}  // namespace ccgym
