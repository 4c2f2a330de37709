#pragma once
// ScopedEnvironment: sets (or unsets) an environment variable for the
// lifetime of the object and restores what was there before, so a test of
// an environment switch leaves the process as it found it.

#include <cstdlib>
#include <string>

namespace foxrl::test {

class ScopedEnvironment {
 public:
  /// `value` nullptr unsets the variable.
  ScopedEnvironment(const char* name, const char* value) : name_(name) {
    const char* saved = std::getenv(name);
    had_ = saved != nullptr;
    if (had_) saved_ = saved;
    if (value != nullptr)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnvironment() {
    if (had_)
      setenv(name_.c_str(), saved_.c_str(), 1);
    else
      unsetenv(name_.c_str());
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  std::string name_;
  bool had_ = false;
  std::string saved_;
};

}  // namespace foxrl::test
