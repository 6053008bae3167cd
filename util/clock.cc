#include "util/clock.h"

namespace feedd {
namespace {

class SystemClock : public Clock {
 public:
  uint64_t NowMillis() const override {
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
  }
};

}  // namespace

Clock* Clock::System() {
  static SystemClock clock;
  return &clock;
}

}  // namespace feedd
