// Command-line flags of the deploy programs: `--name VALUE` or `--name=VALUE`,
// `--help`. A usage error prints the message and the usage to stderr and exits
// with status 2, like every other usage error of these programs.
#pragma once
#include <cstdint>
#include <cstdio>
#include <exception>
#include <map>
#include <string>
#include <vector>

namespace ccgym::net {

inline constexpr int kExitUsage = 2;

struct FlagDef {
  std::string name;           // without the dashes
  std::string value_name;     // shown in the usage, e.g. "HOST:PORT"
  std::string help;
  std::string default_value;  // "" and !required: optional without a default
  bool required = false;
};

class Flags {
 public:
  Flags(std::string program, std::string summary, std::vector<FlagDef> defs);

  // Parses argv; exits 0 after printing the usage on --help, 2 on an error.
  void parse(int argc, char** argv);

  bool given(const std::string& name) const;  // on the command line or by default
  std::string text(const std::string& name) const;
  double number(const std::string& name) const;       // finite, else usage error
  uint64_t integer(const std::string& name) const;    // non-negative integer
  [[noreturn]] void fail(const std::string& message) const;
  std::string usage() const;
  const std::string& program() const { return program_; }

 private:
  const FlagDef* find(const std::string& name) const;

  std::string program_;
  std::string summary_;
  std::vector<FlagDef> defs_;
  std::map<std::string, std::string> values_;
};

// The body of each program's main(): runs `run`, and turns an exception that
// escaped it into "PROGRAM: what" on stderr and exit status 1.
template <typename Run>
int run_program(const char* program, Run run, int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
    return 1;
  }
}

}  // namespace ccgym::net
