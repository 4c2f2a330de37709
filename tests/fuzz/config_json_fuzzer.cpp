// Fuzzes the training config's JSON reader (TrainConfig::from_json_text, the
// path of `--config` files and of the config inside checkpoint.json): the
// input is the JSON text. A config it accepts must also pass validate() or
// be refused by it with a UsageError, and must survive its own to_json().
#include "config/train_config.hpp"
#include "fuzz_support.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  foxrl::fuzz::expect_clean_rejection([&] {
    const foxrl::TrainConfig c = foxrl::TrainConfig::from_json_text(text, "fuzz input");
    const foxrl::TrainConfig again = foxrl::TrainConfig::from_json_text(c.to_json(), "fuzz input (written back)");
    (void)again;
    c.validate();
  });
  return 0;
}
