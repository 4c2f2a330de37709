#include "offline/dataset_merge.hpp"

#include "core/error.hpp"
#include "offline/dataset_file.hpp"

#include <cstdint>
#include <map>
#include <string>

namespace foxrl {

DatasetMergeSummary merge_datasets(const std::vector<std::string>& inputs, const std::string& out_path) {
  if (inputs.size() < 2)
    throw UsageError("dataset merge: name at least two input datasets, got " + std::to_string(inputs.size()));
  std::vector<DatasetFile> parts;
  parts.reserve(inputs.size());
  for (const auto& path : inputs) parts.push_back(read_dataset_file(path));
  const DatasetFile& first = parts.front();
  const DatasetMetadata& m0 = first.metadata;
  for (std::size_t p = 1; p < parts.size(); ++p) {
    const DatasetMetadata& m = parts[p].metadata;
    const auto differs = [&](const char* what, const std::string& a, const std::string& b) {
      if (a != b)
        throw UsageError("dataset merge: " + parts[p].path + " records " + what + " " + b + ", " + first.path + " " +
                         a + ": only datasets of the same env merge");
    };
    differs("env", m0.env, m.env);
    differs("obs_dim", std::to_string(m0.obs_dim), std::to_string(m.obs_dim));
    differs("num_actions", std::to_string(m0.num_actions), std::to_string(m.num_actions));
    differs("num_envs", std::to_string(m0.num_envs), std::to_string(m.num_envs));
    if (m0.env == "market") {
      differs("market config", m0.config.to_json(), m.config.to_json());
      if (parts[p].normalizer.has_value() != first.normalizer.has_value() ||
          (first.normalizer &&
           (first.normalizer->mean != parts[p].normalizer->mean || first.normalizer->m2 != parts[p].normalizer->m2)))
        throw UsageError("dataset merge: " + parts[p].path + " and " + first.path +
                         " were recorded through different observation normalisers");
    }
  }

  safetensors::File out;
  std::int64_t rows = 0;
  bool order_known = true;
  const std::int64_t envs = m0.num_envs;
  for (const auto& part : parts) rows += part.rows;
  for (const auto& name : dataset_tensor_names()) {
    safetensors::Tensor t = first.tensor(name);
    t.shape[0] = rows;
    t.data.clear();
    for (const auto& part : parts) {
      const auto& src = part.tensor(name).data;
      t.data.insert(t.data.end(), src.begin(), src.end());
    }
    out.tensors.push_back(std::move(t));
  }
  // Cut episodes at the end of every part but the last (see the header).
  auto& truncated = out.tensors[5].data;
  std::int64_t offset = 0;
  for (std::size_t p = 0; p + 1 < parts.size(); ++p) {
    const DatasetFile& part = parts[p];
    order_known = order_known && part.metadata.row_order_known && part.rows % envs == 0;
    offset += part.rows;
    if (!order_known) continue;
    for (std::int64_t i = 0; i < envs; ++i) {
      const std::int64_t row = offset - envs + i;
      const std::uint8_t terminated = out.tensors[4].data[static_cast<std::size_t>(row)];
      if (terminated == 0) truncated[static_cast<std::size_t>(row)] = 1;
    }
  }
  order_known = order_known && parts.back().metadata.row_order_known;
  for (const auto& t : first.file.tensors)
    if (t.name.rfind("normalizer.", 0) == 0) out.tensors.push_back(t);

  out.metadata = first.file.metadata;
  out.metadata.erase("row_order");
  if (order_known) out.metadata["row_order"] = "row = iteration * num_envs + env";
  out.metadata["transitions"] = std::to_string(rows);
  std::string policies, sources;
  for (const auto& part : parts) {
    const DatasetMetadata& m = part.metadata;
    policies += (policies.empty() ? "" : " + ") + (m.policy.empty() ? std::string("unknown") : m.policy) +
                (m.epsilon.empty() || m.policy != "epsilon-greedy" ? std::string() : " " + m.epsilon) + " (" +
                std::to_string(part.rows) + ")";
    sources += (sources.empty() ? "" : "; ") + part.path;
  }
  out.metadata["policy"] = "merged: " + policies;
  out.metadata["merged_from"] = sources;
  for (const char* key : {"epsilon", "run", "seed"}) out.metadata.erase(key);
  safetensors::write(out_path, out);
  return {rows, order_known};
}

}  // namespace foxrl
