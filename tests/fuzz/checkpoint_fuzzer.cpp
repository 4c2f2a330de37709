// Fuzzes the checkpoint loaders of `eval`, `infer`, `collect` and resume:
// an input that starts like JSON ('{' after optional spaces or a UTF-8 BOM)
// is checkpoint.json for RunManifest::read, any other input is
// checkpoint.safetensors for the learner's load() (the network of the tiny
// market trainer, tiny_trainer.hpp; fuzz_seeds writes matching seeds).
#include "fuzz_support.hpp"
#include "tiny_trainer.hpp"
#include "train/run_manifest.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace {

foxrl::fuzz::Trainer* market = nullptr;

bool looks_like_json(const std::uint8_t* data, std::size_t size) {
  std::size_t i = 0;
  if (size >= 3 && data[0] == 0xEF && data[1] == 0xBB && data[2] == 0xBF) i = 3;
  while (i < size && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r')) ++i;
  return i < size && data[i] == '{';
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  foxrl::fuzz::init_kokkos();
  // Held until the process ends (Kokkos is never finalized here).
  market = new foxrl::fuzz::Trainer(foxrl::fuzz::tiny_config("market", foxrl::fuzz::scratch_dir() + "/market"));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& dir = foxrl::fuzz::scratch_dir();
  if (looks_like_json(data, size)) {
    foxrl::fuzz::write_file(dir + "/checkpoint.json", data, size);
    foxrl::fuzz::expect_clean_rejection([&] {
      const foxrl::RunManifest m = foxrl::RunManifest::read(dir);
      m.config.validate();
    });
  } else {
    const std::string path = dir + "/checkpoint.safetensors";
    foxrl::fuzz::write_file(path, data, size);
    foxrl::fuzz::expect_clean_rejection([&] { market->learner().load(market->context().space(), path); });
  }
  return 0;
}
