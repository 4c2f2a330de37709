// Fuzzes the trainer-state loader (load_trainer_state, the heart of
// `foxrl train --resume`): the input is trainer_state.safetensors, loaded
// into the parts of a tiny CartPole trainer when it names "cartpole" and of
// a tiny market trainer otherwise (tiny_trainer.hpp; fuzz_seeds writes
// matching seeds). Everything the loader accepts is validated before it
// reaches a kernel, so with FOXRL_FUZZ_ITERATE=1 an accepted state is also
// loaded into a fresh trainer that then runs two iterations (collector
// steps, replay inserts and an update).
#include "fuzz_support.hpp"
#include "tiny_trainer.hpp"
#include "train/trainer_state.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

namespace {

using foxrl::fuzz::Trainer;

bool iterate_after_load = false;
Trainer* cartpole = nullptr;
Trainer* market = nullptr;

bool names_cartpole(const std::uint8_t* data, std::size_t size) {
  static const char needle[] = "cartpole";
  const std::size_t n = sizeof(needle) - 1;
  for (std::size_t i = 0; i + n <= size; ++i)
    if (std::memcmp(data + i, needle, n) == 0) return true;
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  foxrl::fuzz::init_kokkos();
  const char* iterate = std::getenv("FOXRL_FUZZ_ITERATE");
  iterate_after_load = iterate != nullptr && std::string(iterate) == "1";
  const std::string dir = foxrl::fuzz::scratch_dir();
  // Held until the process ends (Kokkos is never finalized here).
  cartpole = new Trainer(foxrl::fuzz::tiny_config("cartpole", dir + "/cartpole"));
  market = new Trainer(foxrl::fuzz::tiny_config("market", dir + "/market"));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = foxrl::fuzz::scratch_dir() + "/trainer_state.safetensors";
  foxrl::fuzz::write_file(path, data, size);
  const bool is_cartpole = names_cartpole(data, size);
  Trainer& t = is_cartpole ? *cartpole : *market;
  bool loaded = false;
  foxrl::fuzz::expect_clean_rejection([&] {
    foxrl::load_trainer_state(t.context().space(), path, foxrl::fuzz::parts_of(t));
    loaded = true;
  });
  if (loaded && iterate_after_load) {
    const auto fresh = std::make_unique<Trainer>(t.config());
    foxrl::load_trainer_state(fresh->context().space(), path, foxrl::fuzz::parts_of(*fresh));
    fresh->iterate();
    fresh->iterate();
    fresh->context().fence("fuzz::trainer_state::iterated");
  }
  return 0;
}
