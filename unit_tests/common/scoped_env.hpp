#ifndef STATEXFER_TEST_SCOPED_ENV_HPP
#define STATEXFER_TEST_SCOPED_ENV_HPP

// An environment variable set for one scope (the tuning diagnostics that the
// constructor and prepare() read), restored to what it was after.

#include <cstdlib>
#include <string>

namespace statexfer::test {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had_)
      ::setenv(name_, old_.c_str(), 1);
    else
      ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

}  // namespace statexfer::test

#endif
