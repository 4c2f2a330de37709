// Fuzzes the action file reader of `foxrl rollout` (read_action_file): the
// input is the file, read for CartPole's 2 and the market's 3 actions.
#include "envs/rollout.hpp"
#include "fuzz_support.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = foxrl::fuzz::scratch_dir() + "/actions.txt";
  foxrl::fuzz::write_file(path, data, size);
  for (const int num_actions : {2, 3}) {
    foxrl::fuzz::expect_clean_rejection([&] {
      const auto actions = foxrl::read_action_file(path, num_actions);
      if (actions.empty()) std::abort();
      for (const auto a : actions)
        if (a < 0 || a >= num_actions) std::abort();
    });
  }
  return 0;
}
