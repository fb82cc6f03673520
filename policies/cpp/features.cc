#include "policies/cpp/features.hh"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace ccgym {

namespace {
double ewma(double average, double sample, bool first) {
  return first ? sample : (1 - kEwmaGain) * average + kEwmaGain * sample;
}
// Bytes per ms to Mbit/s.
constexpr double kBytesPerMsToMbps = 8.0 / 1000.0;
// Rates over intervals shorter than this are noise (Indigo floors them at 1 ms).
constexpr double kMinRateIntervalMs = 1.0;
}  // namespace

void Features::on_sent(uint64_t seq, uint32_t bytes, double send_ms) {
  (void)send_ms;
  packet_bytes_ = std::max<uint32_t>(bytes, 1);
  in_flight_.push_back({seq, sent_bytes_, delivered_bytes_, delivered_ms_});
  sent_bytes_ += bytes;
}

void Features::on_ack(uint64_t seq, uint32_t bytes, double send_ms, double ack_ms) {
  // Records of datagrams older than this ACK belong to lost ones: forget them.
  uint64_t lost = 0;
  while (!in_flight_.empty() && in_flight_.front().seq < seq) {
    in_flight_.pop_front();
    ++lost;
  }
  if (in_flight_.empty() || in_flight_.front().seq != seq) return;  // unknown or duplicate
  const SentRecord sent = in_flight_.front();
  in_flight_.pop_front();

  const double rtt = ack_ms - send_ms;
  const bool first = !have_sample_;
  if (have_sample_) {
    // ACKs in the same instant (a trace's millisecond) count as arriving at the top rate.
    const double gap_ms = ack_ms - values_.last_ack_ms;
    const double rate =
        gap_ms > 0 ? std::min(kRateTopMbps, kBytesPerMsToMbps * bytes / gap_ms) : kRateTopMbps;
    ack_rate_log_ = ewma(ack_rate_log_, std::log(std::max(rate, kRateUnitMbps)), !have_ack_gap_);
    have_ack_gap_ = true;
    values_.ack_rate_mbps = std::exp(ack_rate_log_);
  }
  values_.last_rtt_ms = rtt;
  values_.min_rtt_ms = first ? rtt : std::min(values_.min_rtt_ms, rtt);
  values_.delay_ewma_ms = ewma(values_.delay_ewma_ms, rtt - values_.min_rtt_ms, first);
  values_.last_ack_ms = ack_ms;
  values_.loss_ewma = ewma(values_.loss_ewma, static_cast<double>(lost) / static_cast<double>(lost + 1),
                           first);

  delivered_bytes_ += bytes;
  // Delivery rate as BBR measures it: bytes acknowledged since this datagram
  // left, over the time since the ACK that was newest when it left.
  const double delivered_interval = std::max(kMinRateIntervalMs, ack_ms - sent.delivered_ms);
  const double delivery_rate =
      kBytesPerMsToMbps * (delivered_bytes_ - sent.delivered_bytes) / delivered_interval;
  // Sending rate: bytes sent since this datagram left, over its flight time.
  const double send_interval = std::max(kMinRateIntervalMs, rtt);
  const double send_rate = kBytesPerMsToMbps * (sent_bytes_ - sent.sent_bytes) / send_interval;
  delivered_ms_ = ack_ms;

  values_.delivery_rate_mbps = ewma(values_.delivery_rate_mbps, delivery_rate, first);
  values_.send_rate_mbps = ewma(values_.send_rate_mbps, send_rate, first);
  if (keep_competition_) update_competition_readings(rtt, ack_ms, send_rate / delivery_rate);
  have_sample_ = true;
}

void Features::update_competition_readings(double rtt, double ack_ms, double rate_ratio) {
  // The first sample since the readings are kept starts both averages.
  const bool first = least_rtts_.empty();
  const double ratio = std::log2(rate_ratio);  // both rates count this datagram: above 0
  values_.rate_ratio_log2 = ewma(values_.rate_ratio_log2, ratio, first);
  values_.rate_ratio_log2_slow =
      first ? ratio
            : (1 - kSlowEwmaGain) * values_.rate_ratio_log2_slow + kSlowEwmaGain * ratio;
  update_standing_queue(rtt, ack_ms);
}

void Features::update_standing_queue(double rtt, double ack_ms) {
  // Monotonic queues: each ring holds, oldest first, the samples that can still become the
  // span's least (largest) RTT, so both are at the front and each ACK costs O(1) amortized.
  while (!least_rtts_.empty() && least_rtts_.back().rtt_ms >= rtt) least_rtts_.pop_back();
  least_rtts_.push_back({ack_ms, rtt});
  while (!largest_rtts_.empty() && largest_rtts_.back().rtt_ms <= rtt) largest_rtts_.pop_back();
  largest_rtts_.push_back({ack_ms, rtt});
  const double span_ms = kDrainRtts * (values_.min_rtt_ms + values_.delay_ewma_ms);
  while (least_rtts_.front().ack_ms < ack_ms - span_ms) least_rtts_.pop_front();
  while (largest_rtts_.front().ack_ms < ack_ms - span_ms) largest_rtts_.pop_front();
  const double least = least_rtts_.front().rtt_ms - values_.min_rtt_ms;
  const double range = largest_rtts_.front().rtt_ms - values_.min_rtt_ms;
  values_.standing_queue = std::clamp(least / std::max(range, kDelayUnitMs), 0.0, 1.0);
}

int observation_dim(int version) {
  if (version == kObservationVersion) return kObsDim;
  if (version == kCompetitionObservationVersion) return kObsDimV6;
  return -1;
}

double log_scaled(double x, double unit, double top) {
  return std::log1p(std::max(0.0, x) / unit) / std::log1p(top / unit);
}

double Features::delivered_packets_over(double ms) const {
  if (!have_sample_) return -1;
  return values_.delivery_rate_mbps / kBytesPerMsToMbps * ms / packet_bytes_;
}

double Features::pipe_packets() const { return delivered_packets_over(values_.min_rtt_ms); }

double Features::flight_packets() const {
  return delivered_packets_over(values_.min_rtt_ms + values_.delay_ewma_ms);
}

std::array<float, kObsDim> Features::observation(double window, int previous_action,
                                                 double now_ms) const {
  std::array<float, kObsDim> obs{};
  observation_into(kObservationVersion, window, previous_action, now_ms, obs.data());
  return obs;
}

void Features::observation_into(int version, double window, int previous_action, double now_ms,
                                float* obs) const {
  const int dim = observation_dim(version);
  if (dim < 0) {
    throw std::invalid_argument("observation version " + std::to_string(version) +
                                " is not computed by this build");
  }
  std::fill(obs, obs + dim, 0.0F);
  if (version == kCompetitionObservationVersion) keep_competition_readings();
  obs[0] = static_cast<float>(log_scaled(values_.delay_ewma_ms, kDelayUnitMs, kDelayTopMs));
  obs[1] = static_cast<float>(
      log_scaled(values_.delivery_rate_mbps, kRateUnitMbps, kRateTopMbps));
  obs[2] = static_cast<float>(log_scaled(values_.send_rate_mbps, kRateUnitMbps, kRateTopMbps));
  obs[kObsWindowIndex] = static_cast<float>(log_scaled(window, kWindowUnit, kMaxWindow));
  if (have_sample_) {
    obs[4] = static_cast<float>(log_scaled(values_.min_rtt_ms, kDelayUnitMs, kDelayTopMs));
    obs[5] = static_cast<float>(
        log_scaled(values_.last_rtt_ms - values_.min_rtt_ms, kDelayUnitMs, kDelayTopMs));
    obs[6] = static_cast<float>(
        log_scaled(now_ms - values_.last_ack_ms, kDelayUnitMs, kDelayTopMs));
    const double pipe = pipe_packets();
    if (pipe > 0) {
      const double ratio = std::log2(window / pipe) / kPipeRatioLog2Top;
      obs[kObsPipeRatioIndex] = static_cast<float>(std::clamp(ratio, -1.0, 1.0));
    }
    obs[8] = static_cast<float>(values_.loss_ewma);
    obs[9] = static_cast<float>(log_scaled(values_.ack_rate_mbps, kRateUnitMbps, kRateTopMbps));
    if (version == kCompetitionObservationVersion) {
      obs[10] = static_cast<float>(values_.standing_queue);
      obs[11] = static_cast<float>(
          std::clamp(values_.rate_ratio_log2 / kRateRatioLog2Top, -1.0, 1.0));
      obs[12] = static_cast<float>(
          std::clamp(values_.rate_ratio_log2_slow / kRateRatioLog2Top, -1.0, 1.0));
    }
  }
  const int action_offset =
      version == kCompetitionObservationVersion ? kObsActionOffsetV6 : kObsActionOffset;
  if (previous_action >= 0 && previous_action < kNumActions) {
    obs[action_offset + previous_action] = 1.0f;
  }
}

}  // namespace ccgym
