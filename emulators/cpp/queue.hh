// Queue disciplines behind one small interface (after mahimahi's AbstractPacketQueue),
// each built by make_queue() from "name" or "name:key=value:key=value".
#pragma once
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/cpp/packet.hh"
#include "common/cpp/ring.hh"

namespace ccgym {

class Queue {
 public:
  virtual ~Queue() = default;
  // Offers a packet at now_ms (link clock). Returns false if it is dropped instead.
  virtual bool enqueue(const Packet& packet, double now_ms) = 0;
  // Removes the packet to serve next into `out`; returns false if none is left.
  // Disciplines that drop at the head (CoDel) append those packets to `dropped`.
  virtual bool dequeue(double now_ms, Packet& out, std::vector<Packet>& dropped) = 0;
  virtual bool empty() const = 0;
  virtual uint64_t size_bytes() const = 0;
  virtual uint64_t size_packets() const = 0;
  virtual std::string to_string() const = 0;
};

// Builds a queue from its spec: "infinite", "droptail:packets=N", "droptail:bytes=N",
// "red:min=N:max=N:max_p=P[:weight=W]" (thresholds in packets), "codel[:target_ms=5:interval_ms=100]".
// Throws std::invalid_argument naming the bad key and the valid ones.
std::unique_ptr<Queue> make_queue(const std::string& spec, uint64_t seed);

// A FIFO with byte and packet counts, shared by the disciplines.
class FifoQueue : public Queue {
 public:
  bool empty() const override { return packets_.empty(); }
  uint64_t size_bytes() const override { return bytes_; }
  uint64_t size_packets() const override { return packets_.size(); }
  // The head, as every FIFO discipline that drops only on arrival hands it out.
  bool dequeue(double, Packet& out, std::vector<Packet>&) override {
    if (empty()) return false;
    out = pop();
    return true;
  }

 protected:
  void push(const Packet& p) { packets_.push_back(p); bytes_ += p.bytes; }
  Packet pop() {
    Packet p = packets_.front();
    packets_.pop_front();
    bytes_ -= p.bytes;
    return p;
  }
  const Packet& head() const { return packets_.front(); }

 private:
  Ring<Packet> packets_;
  uint64_t bytes_ = 0;
};

}  // namespace ccgym
