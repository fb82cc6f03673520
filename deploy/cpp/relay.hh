// The real-time relay's core, without sockets or clocks: datagrams enter one of
// the path's two LinkDirections (data: sender -> receiver, ACK: receiver ->
// sender) at the time the caller says and come out when the link says. The
// datagrams' bytes wait in a slot pool, the slot index riding in Packet::tag, so
// that after warm-up nothing is allocated per packet. ccgym-link wraps it in a
// socket loop on the wall clock, ccgym-shell-link in a TUN loop (IP packets the
// caller describes itself, through offer_packet); tests drive it in virtual time.
#pragma once
#include <algorithm>
#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "deploy/cpp/wire.hh"
#include "emulators/cpp/link.hh"

namespace ccgym {

// Fixed-size byte slots handed out by index. The pool grows by whole blocks when
// every slot is taken (so a slot never moves), up to max_slots; a block is
// allocated only when more datagrams wait than ever before.
class SlotPool {
 public:
  static constexpr uint32_t kNoSlot = UINT32_MAX;
  static constexpr uint32_t kBlockSlots = 256;

  SlotPool(uint32_t slot_bytes, uint32_t max_slots)
      : slot_bytes_(slot_bytes), max_slots_(max_slots) {
    free_.reserve(max_slots);
  }

  // A free slot, or kNoSlot when max_slots are in use.
  uint32_t acquire() {
    if (free_.empty() && !grow()) return kNoSlot;
    const uint32_t slot = free_.back();
    free_.pop_back();
    return slot;
  }
  void release(uint32_t slot) {
    assert(slot < capacity() && free_.size() < capacity());
    free_.push_back(slot);
  }
  unsigned char* bytes(uint32_t slot) {
    return blocks_[slot / kBlockSlots].get() + std::size_t{slot % kBlockSlots} * slot_bytes_;
  }
  uint32_t& length(uint32_t slot) { return lengths_[slot]; }
  uint32_t slot_bytes() const { return slot_bytes_; }
  uint32_t capacity() const { return static_cast<uint32_t>(lengths_.size()); }
  uint32_t in_use() const { return capacity() - static_cast<uint32_t>(free_.size()); }

 private:
  bool grow() {
    const uint32_t have = capacity();
    if (have >= max_slots_) return false;
    const uint32_t add = std::min(kBlockSlots, max_slots_ - have);
    blocks_.push_back(std::make_unique<unsigned char[]>(std::size_t{kBlockSlots} * slot_bytes_));
    lengths_.resize(have + add, 0);
    // Lowest index on top of the stack: slots are reused in a cache-friendly order.
    for (uint32_t i = have + add; i > have; --i) free_.push_back(i - 1);
    return true;
  }

  uint32_t slot_bytes_;
  uint32_t max_slots_;
  std::vector<std::unique_ptr<unsigned char[]>> blocks_;
  std::vector<uint32_t> lengths_;
  std::vector<uint32_t> free_;
};

class Relay {
 public:
  enum Side : std::size_t { kData = 0, kAck = 1 };

  // What happened to the datagrams offered on one side.
  struct Counters {
    uint64_t offered = 0;     // datagrams handed to offer()
    uint64_t malformed = 0;   // not a datagram of this side's kind (or oversized): dropped
    uint64_t pool_full = 0;   // no slot free: dropped before the link
    uint64_t dropped = 0;     // dropped by the link (loss, queue)
    uint64_t delivered = 0;   // came out of the link
  };

  // A slot holds the largest data payload; ACKs get slots of their own size.
  static constexpr uint32_t kDataSlotBytes = wire::kMaxDataPayloadBytes;
  static constexpr uint32_t kAckSlotBytes = wire::kAckPayloadBytes;
  // 2^16 datagrams of 1472 bytes (~96 MB) may wait in the data direction: far
  // beyond any window the schemes use (kMaxWindow), short of exhausting memory.
  static constexpr uint32_t kDefaultMaxSlots = 1 << 16;

  // slot_bytes: the longest datagram each side holds (the link shell's: its MTU).
  Relay(std::unique_ptr<LinkDirection> data, std::unique_ptr<LinkDirection> ack,
        uint32_t max_slots = kDefaultMaxSlots,
        std::array<uint32_t, 2> slot_bytes = {kDataSlotBytes, kAckSlotBytes})
      : directions_{std::move(data), std::move(ack)},
        pools_{SlotPool(slot_bytes[kData], max_slots), SlotPool(slot_bytes[kAck], max_slots)} {}

  // Called with each packet the link drops (loss or queue), before its slot is
  // freed: the link shell logs drops.
  using DropObserver = std::function<void(Side, const Packet&)>;
  void observe_drops(DropObserver observer) { on_drop_ = std::move(observer); }

  // Where to receive the next datagram of `side`: a slot of slot_bytes(side), or
  // kNoSlot if the pool is full (receive into scratch and call reject_pool_full()).
  uint32_t acquire(Side side) { return pools_[side].acquire(); }
  unsigned char* slot(Side side, uint32_t slot) { return pools_[side].bytes(slot); }
  uint32_t slot_bytes(Side side) const { return pools_[side].slot_bytes(); }
  // Returns a slot from acquire() that received nothing.
  void release(Side side, uint32_t slot) { pools_[side].release(slot); }
  void reject_pool_full(Side side) {
    ++counters_[side].offered;
    ++counters_[side].pool_full;
  }

  // The datagram of `length` bytes (its full length: more than slot_bytes means it
  // was cut short) received into `slot` entered the relay at now_ms (relay clock).
  // Returns false if it was malformed; then `*flow` is untouched. Either way the
  // slot belongs to the relay again.
  bool offer(Side side, uint32_t slot, std::size_t length, double now_ms, uint32_t* flow) {
    SlotPool& pool = pools_[side];
    Packet packet;
    if (!parse(side, pool.bytes(slot), length, pool.slot_bytes(), packet)) {
      reject_malformed(side, slot);
      return false;
    }
    if (flow != nullptr) *flow = packet.flow;
    offer_packet(side, slot, length, packet, now_ms);
    return true;
  }

  // The datagram of `length` bytes (at most slot_bytes) in `slot`, described by
  // the caller as `packet` (flow, seq, bytes on the wire, ...), entered the relay
  // at now_ms (relay clock). The slot belongs to the relay again.
  void offer_packet(Side side, uint32_t slot, std::size_t length, Packet packet, double now_ms) {
    SlotPool& pool = pools_[side];
    assert(length <= pool.slot_bytes());
    ++counters_[side].offered;
    pool.length(slot) = static_cast<uint32_t>(length);
    packet.tag = slot;
    LinkDirection& direction = *directions_[side];
    // Opportunities before now must not serve a datagram that was not there yet.
    direction.advance(now_ms);
    direction.send(packet, now_ms);
    release_dropped(side);
  }

  // A datagram in `slot` that is not one the relay carries: counted, slot freed.
  void reject_malformed(Side side, uint32_t slot) {
    ++counters_[side].offered;
    ++counters_[side].malformed;
    pools_[side].release(slot);
  }

  // Runs both directions up to now_ms (relay clock).
  void advance(double now_ms) {
    for (std::size_t side : {kData, kAck}) {
      directions_[side]->advance(now_ms);
      release_dropped(static_cast<Side>(side));
    }
  }

  // When advance() next has something to do; kNever if both directions are idle.
  double next_event_ms() const {
    return std::min(directions_[kData]->next_event_ms(), directions_[kAck]->next_event_ms());
  }

  // Hands each datagram of `side` that came out of the link by the last advance()
  // to out(flow, bytes, length, arrival_ms), oldest first, then frees its slot.
  template <typename Out>
  void deliver(Side side, Out&& out) {
    LinkDirection& direction = *directions_[side];
    SlotPool& pool = pools_[side];
    for (const LinkDirection::Arrival& arrival : direction.arrivals()) {
      const auto index = static_cast<uint32_t>(arrival.packet.tag);
      out(arrival.packet.flow, static_cast<const unsigned char*>(pool.bytes(index)),
          static_cast<std::size_t>(pool.length(index)), arrival.arrival_ms);
      pool.release(index);
      ++counters_[side].delivered;
    }
    direction.clear_arrivals();
  }

  const Counters& counters(Side side) const { return counters_[side]; }
  // Datagrams inside the relay (queued or propagating) on `side`.
  uint32_t waiting(Side side) const { return pools_[side].in_use(); }
  // Slots allocated so far on `side`: grows only when more datagrams wait than before.
  uint32_t pool_capacity(Side side) const { return pools_[side].capacity(); }
  const LinkDirection& direction(Side side) const { return *directions_[side]; }

 private:
  static bool parse(Side side, const unsigned char* bytes, std::size_t length,
                    uint32_t slot_bytes, Packet& packet) {
    if (length > slot_bytes) return false;
    if (side == kData) {
      wire::DataHeader header;
      if (!wire::decode_data(bytes, length, header)) return false;
      packet.flow = header.flow;
      packet.seq = header.seq;
      packet.sent_ms = header.send_ms;
    } else {
      wire::Ack ack;
      if (!wire::decode_ack(bytes, length, ack)) return false;
      packet.flow = ack.flow;
      packet.seq = ack.seq;
      packet.sent_ms = ack.send_ms;
      packet.recv_ms = ack.recv_ms;
    }
    // The link counts bytes on the wire, as its delivery opportunities do.
    packet.bytes = static_cast<uint32_t>(length) + wire::kIpUdpHeaderBytes;
    return true;
  }

  void release_dropped(Side side) {
    LinkDirection& direction = *directions_[side];
    for (const Packet& packet : direction.dropped()) {
      if (on_drop_) on_drop_(side, packet);
      pools_[side].release(static_cast<uint32_t>(packet.tag));
      ++counters_[side].dropped;
    }
    direction.clear_dropped();
  }

  std::array<std::unique_ptr<LinkDirection>, 2> directions_;
  std::array<SlotPool, 2> pools_;
  std::array<Counters, 2> counters_{};
  DropObserver on_drop_;
};

}  // namespace ccgym
