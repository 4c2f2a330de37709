#include "nn/parameter_io.hpp"

#include "core/error.hpp"
#include "core/validate.hpp"

#include <cmath>
#include <cstring>
#include <sstream>
#include <utility>

namespace foxrl {
namespace {

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::ostringstream s;
  s << '[';
  for (std::size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
  s << ']';
  return s.str();
}

}  // namespace

void append_parameter_tensors(safetensors::File& file, const std::string& prefix, const NetworkLayout& layout,
                              const std::vector<float>& flat) {
  if (flat.size() != layout.total)
    throw LogicError("parameter set '" + prefix + "' holds " + std::to_string(flat.size()) + " floats, layout " +
                     layout.describe() + " needs " + std::to_string(layout.total));
  for (int l = 0; l < layout.num_layers; ++l) {
    const auto& s = layout.layers[l];
    const std::string base = prefix + "." + layout.module_name(l);
    file.tensors.push_back(safetensors::make_f32(base + ".weight", {s.out, s.in}, flat.data() + s.weight_offset));
    file.tensors.push_back(safetensors::make_f32(base + ".bias", {s.out}, flat.data() + s.bias_offset));
  }
}

TensorReader::TensorReader(const std::string& path, std::string architecture)
    : path_(path), architecture_(std::move(architecture)), file_(safetensors::read(path)) {}

void TensorReader::fail(const std::string& tensor, const std::string& what) const {
  throw UsageError("checkpoint '" + path_ + "': tensor '" + tensor + "': " + what);  // a damaged or foreign file
}

std::vector<float> TensorReader::parameters(const std::string& prefix, const NetworkLayout& layout, Values values) {
  std::vector<float> flat(layout.total, 0.0f);
  for (int l = 0; l < layout.num_layers; ++l) {
    const auto& s = layout.layers[l];
    const std::string base = prefix + "." + layout.module_name(l);
    const std::pair<std::string, std::vector<std::int64_t>> tensors[2] = {{base + ".weight", {s.out, s.in}},
                                                                          {base + ".bias", {s.out}}};
    const std::size_t offsets[2] = {s.weight_offset, s.bias_offset};
    for (int k = 0; k < 2; ++k) {
      const auto& [name, shape] = tensors[k];
      taken_.insert(name);
      const auto* t = file_.find(name);
      if (t == nullptr) fail(name, "missing (architecture " + architecture_ + ")");
      if (t->dtype != "F32") fail(name, "dtype " + t->dtype + ", expected F32");
      if (t->shape != shape)
        fail(name, "shape " + shape_string(t->shape) + ", expected " + shape_string(shape) + " (architecture " +
                       architecture_ + ")");
      float* out = flat.data() + offsets[k];
      std::memcpy(out, t->data.data(), t->data.size());
      const std::size_t n = t->data.size() / sizeof(float);
      for (std::size_t i = 0; i < n; ++i) {
        const bool ok = std::isfinite(out[i]) && (values == Values::finite || out[i] >= 0.0f);
        if (!ok) {
          const std::size_t cols = shape.size() == 2 ? static_cast<std::size_t>(shape[1]) : 0;
          const std::string at =
              cols > 0 ? std::to_string(i / cols) + ", " + std::to_string(i % cols) : std::to_string(i);
          fail(name, "element [" + at + "] is " + format_value(out[i]) + ": must be finite" +
                         (values == Values::finite ? "" : " and >= 0"));
        }
      }
    }
  }
  return flat;
}

std::int64_t TensorReader::counter(const std::string& name) {
  taken_.insert(name);
  const auto* t = file_.find(name);
  if (t == nullptr) fail(name, "missing");
  if (t->dtype != "I64") fail(name, "dtype " + t->dtype + ", expected I64");
  if (!t->shape.empty()) fail(name, "shape " + shape_string(t->shape) + ", expected [] (a scalar)");
  std::int64_t v = 0;
  std::memcpy(&v, t->data.data(), sizeof(v));
  if (v < 0) fail(name, "negative counter " + std::to_string(v));
  return v;
}

void TensorReader::finish() const {
  for (const auto& t : file_.tensors)
    if (taken_.count(t.name) == 0) fail(t.name, "unexpected tensor (architecture " + architecture_ + ")");
}

}  // namespace foxrl
