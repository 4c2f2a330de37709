// set_tensor_element FILE TENSOR INDEX VALUE: sets one element of a float
// tensor (F32 or F64) in a safetensors file and writes the file again as a
// whole, so the CLI tests can hand the tool a checkpoint that is a valid
// container with one bad value in it (e.g. VALUE nan).
#include "io/safetensors.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: set_tensor_element FILE TENSOR INDEX VALUE\n";
    return 2;
  }
  try {
    const std::string path = argv[1], name = argv[2];
    const std::int64_t index = std::stoll(argv[3]);
    const double value = std::strtod(argv[4], nullptr);
    auto file = foxrl::safetensors::read(path);
    for (auto& t : file.tensors) {
      if (t.name != name) continue;
      if (index < 0 || index >= t.numel()) {
        std::cerr << "set_tensor_element: " << name << " has " << t.numel() << " elements\n";
        return 2;
      }
      if (t.dtype == "F32") {
        const auto v = static_cast<float>(value);
        std::memcpy(t.data.data() + index * sizeof(v), &v, sizeof(v));
      } else if (t.dtype == "F64") {
        std::memcpy(t.data.data() + index * sizeof(value), &value, sizeof(value));
      } else {
        std::cerr << "set_tensor_element: " << name << " is " << t.dtype << ", not F32 or F64\n";
        return 2;
      }
      foxrl::safetensors::write(path, file);
      return 0;
    }
    std::cerr << "set_tensor_element: no tensor " << name << " in " << path << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "set_tensor_element: " << e.what() << "\n";
    return 1;
  }
}
