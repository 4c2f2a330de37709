#include "agents/dqn/dqn_checkpoint.hpp"

#include "core/error.hpp"
#include "core/strings.hpp"
#include "io/safetensors.hpp"

#include <cstring>
#include <set>
#include <sstream>

namespace foxrl {
namespace {

std::vector<float>* buffer(DqnCheckpointHost& s, int i) {
  switch (i) {
    case 0: return &s.online;
    case 1: return &s.target;
    case 2: return &s.adam_m;
    default: return &s.adam_v;
  }
}

const std::vector<float>* buffer(const DqnCheckpointHost& s, int i) {
  return buffer(const_cast<DqnCheckpointHost&>(s), i);
}

std::string hidden_string(const NetworkLayout& layout) {
  std::string s;
  for (int l = 0; l + 1 < layout.num_layers; ++l) {
    if (l) s += ',';
    s += std::to_string(layout.layers[l].out);
  }
  return s;
}

/// Every float tensor of the layout: (name, shape, flat offset).
struct Expected {
  std::string name;
  std::vector<std::int64_t> shape;
  std::size_t offset;
  int buffer;
};

std::vector<Expected> expected_tensors(const NetworkLayout& layout) {
  std::vector<Expected> out;
  for (int b = 0; b < 4; ++b) {
    for (int l = 0; l < layout.num_layers; ++l) {
      const auto& s = layout.layers[l];
      const std::string base = std::string(dqn_checkpoint_prefixes[b]) + "." + layout.module_name(l);
      out.push_back({base + ".weight", {s.out, s.in}, s.weight_offset, b});
      out.push_back({base + ".bias", {s.out}, s.bias_offset, b});
    }
  }
  return out;
}

}  // namespace

void save_dqn_checkpoint(const std::string& path, const NetworkLayout& layout, const DqnCheckpointHost& state,
                         const std::map<std::string, std::string>& extra_metadata) {
  safetensors::File file;
  for (int b = 0; b < 4; ++b)
    if (buffer(state, b)->size() != layout.total)
      throw Error("foxrl: saving checkpoint '" + path + "': buffer '" + dqn_checkpoint_prefixes[b] + "' holds " +
                  std::to_string(buffer(state, b)->size()) + " floats, layout needs " + std::to_string(layout.total));
  for (const auto& e : expected_tensors(layout))
    file.tensors.push_back(safetensors::make_f32(e.name, e.shape, buffer(state, e.buffer)->data() + e.offset));
  file.tensors.push_back(safetensors::make_i64_scalar("adam.step", state.adam_step));
  file.tensors.push_back(safetensors::make_i64_scalar("learner.updates", state.updates));
  file.metadata = extra_metadata;
  file.metadata["format"] = "foxrl.dqn_learner";
  file.metadata["format_version"] = "1";
  file.metadata["obs_dim"] = std::to_string(layout.obs_dim);
  file.metadata["hidden"] = hidden_string(layout);
  file.metadata["num_actions"] = std::to_string(layout.num_actions);
  file.metadata["head"] = "dueling: head outputs [V, A_0..A_{n-1}], Q = V + A - mean(A)";
  file.metadata["activation"] = "relu";
  safetensors::write(path, file);
}

DqnCheckpointHost load_dqn_checkpoint(const std::string& path, const NetworkLayout& layout) {
  const safetensors::File file = safetensors::read(path);
  auto fail = [&](const std::string& tensor, const std::string& what) {
    throw Error("foxrl: checkpoint '" + path + "': tensor '" + tensor + "': " + what);
  };
  DqnCheckpointHost state;
  for (int b = 0; b < 4; ++b) buffer(state, b)->assign(layout.total, 0.0f);
  std::set<std::string> known;
  for (const auto& e : expected_tensors(layout)) {
    known.insert(e.name);
    const auto* t = file.find(e.name);
    if (t == nullptr) fail(e.name, "missing (architecture " + layout.describe() + ")");
    if (t->dtype != "F32") fail(e.name, "dtype " + t->dtype + ", expected F32");
    if (t->shape != e.shape)
      fail(e.name, "shape " + shape_string(t->shape) + ", expected " + shape_string(e.shape) + " (architecture " +
                       layout.describe() + ")");
    std::memcpy(buffer(state, e.buffer)->data() + e.offset, t->data.data(), t->data.size());
  }
  for (const char* name : {"adam.step", "learner.updates"}) {
    known.insert(name);
    const auto* t = file.find(name);
    if (t == nullptr) fail(name, "missing");
    if (t->dtype != "I64") fail(name, "dtype " + t->dtype + ", expected I64");
    if (!t->shape.empty()) fail(name, "shape " + shape_string(t->shape) + ", expected [] (a scalar)");
    std::int64_t v = 0;
    std::memcpy(&v, t->data.data(), sizeof(v));
    if (v < 0) fail(name, "negative counter " + std::to_string(v));
    (std::string(name) == "adam.step" ? state.adam_step : state.updates) = v;
  }
  for (const auto& t : file.tensors)
    if (known.count(t.name) == 0) fail(t.name, "unexpected tensor (architecture " + layout.describe() + ")");
  return state;
}

}  // namespace foxrl
