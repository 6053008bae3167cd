// SetThreadName: names the calling thread (as `top -H`, perf and gdb show
// it); Linux keeps the first 15 bytes.
//
// Thread-safety: names only the calling thread.
#pragma once

#include <pthread.h>

#include <string>

namespace feedd {

inline void SetThreadName(const std::string& name) {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

}  // namespace feedd
