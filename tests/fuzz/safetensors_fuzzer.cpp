// Fuzzes the safetensors reader (safetensors::read): the input is the file.
// A file it accepts must hold what its header promised.
#include "fuzz_support.hpp"
#include "io/safetensors.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = foxrl::fuzz::scratch_dir() + "/input.safetensors";
  foxrl::fuzz::write_file(path, data, size);
  foxrl::fuzz::expect_clean_rejection([&] {
    const foxrl::safetensors::File f = foxrl::safetensors::read(path);
    std::size_t bytes = 0;
    for (const auto& t : f.tensors) {
      const std::size_t element = foxrl::safetensors::dtype_size(t.dtype);
      if (element == 0 || t.numel() < 0 || t.data.size() != static_cast<std::size_t>(t.numel()) * element) std::abort();
      if (f.find(t.name) == nullptr) std::abort();
      bytes += t.data.size();
    }
    if (bytes > size) std::abort();
  });
  return 0;
}
