// A buffered tab-separated log for per-packet rows. Numbers are formatted with
// std::to_chars into one buffer allocated at open(), so a row costs no
// allocation and, most of the time, no system call.
#pragma once
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace ccgym::net {

class TsvLog {
 public:
  TsvLog() = default;
  ~TsvLog() { close(); }
  TsvLog(const TsvLog&) = delete;
  TsvLog& operator=(const TsvLog&) = delete;

  // Opens (truncates) path and writes the header line. Throws std::runtime_error.
  void open(const std::string& path, std::string_view header) {
    file_ = std::fopen(path.c_str(), "w");
    if (file_ == nullptr) {
      throw std::runtime_error("cannot open log '" + path + "': " + std::strerror(errno));
    }
    buffer_ = std::make_unique<char[]>(kBufferBytes);
    used_ = 0;
    append(header);
    append("\n");
  }
  bool is_open() const { return file_ != nullptr; }

  TsvLog& text(std::string_view value) {
    separate();
    append(value);
    return *this;
  }
  TsvLog& integer(uint64_t value) {
    if (file_ == nullptr) return *this;
    separate();
    reserve(kMaxField);
    used_ = static_cast<std::size_t>(
        std::to_chars(buffer_.get() + used_, buffer_.get() + kBufferBytes, value).ptr -
        buffer_.get());
    return *this;
  }
  // Milliseconds to the microsecond: the resolution of the clocks that are logged.
  // NaN is written as "nan" (a field that does not apply to the row).
  TsvLog& ms(double value) {
    if (file_ == nullptr) return *this;
    separate();
    reserve(kMaxField);
    used_ = static_cast<std::size_t>(std::to_chars(buffer_.get() + used_,
                                                   buffer_.get() + kBufferBytes, value,
                                                   std::chars_format::fixed, 3)
                                         .ptr -
                                     buffer_.get());
    return *this;
  }
  void end_row() {
    append("\n");
    row_started_ = false;
  }
  // A line starting with '#': readers skip it.
  void comment(std::string_view line) {
    if (row_started_) end_row();
    append("# ");
    append(line);
    append("\n");
  }

  void flush() {
    if (file_ == nullptr || used_ == 0) return;
    if (std::fwrite(buffer_.get(), 1, used_, file_) != used_) write_failed_ = true;
    used_ = 0;
  }
  // Flushes and closes; false if anything could not be written.
  bool close() {
    if (file_ == nullptr) return !write_failed_;
    flush();
    if (std::fclose(file_) != 0) write_failed_ = true;
    file_ = nullptr;
    return !write_failed_;
  }

 private:
  static constexpr std::size_t kBufferBytes = 1 << 20;
  // Longest formatted number: a 20-digit integer, or a double to 3 decimals up to
  // 1e308 (309 digits) -- the logged values are far smaller, but the bound is exact.
  static constexpr std::size_t kMaxField = 330;

  void separate() {
    if (row_started_) append("\t");
    row_started_ = true;
  }
  void reserve(std::size_t bytes) {
    if (used_ + bytes > kBufferBytes) flush();
  }
  void append(std::string_view s) {
    if (file_ == nullptr) return;
    if (used_ + s.size() > kBufferBytes) flush();
    if (s.size() > kBufferBytes) {
      if (std::fwrite(s.data(), 1, s.size(), file_) != s.size()) write_failed_ = true;
      return;
    }
    std::memcpy(buffer_.get() + used_, s.data(), s.size());
    used_ += s.size();
  }

  std::FILE* file_ = nullptr;
  std::unique_ptr<char[]> buffer_;
  std::size_t used_ = 0;
  bool row_started_ = false;
  bool write_failed_ = false;
};

}  // namespace ccgym::net
