#include "train/run_loop.hpp"

#include "core/kernel_check.hpp"
#include "io/strict_json.hpp"

#include <nlohmann/json.hpp>

namespace foxrl::detail {

void keep_metrics_until(const std::string& path, std::int64_t last_epoch) {
  std::ifstream in(path);
  std::string line, text;
  while (std::getline(in, line)) {
    nlohmann::json j;
    try {
      j = parse_strict_json(line, "metrics.jsonl");
    } catch (const UsageError&) {
      continue;  // a line cut short by a crash
    }
    if (!j.is_object() || !j.contains("epoch")) continue;
    if (j.value("epoch", std::int64_t(0)) > last_epoch) continue;
    text += line + "\n";
  }
  in.close();
  write_file_atomically(path, text);
}

Error epoch_failure(std::int64_t epoch, const std::exception& e, std::int64_t checkpointed,
                    const std::string& out_dir) {
  const std::string kernel = KernelCheck::last_kernel();
  return Error(
      "epoch " + std::to_string(epoch) + " failed: " + one_line_message(e.what()) +
      (kernel.empty() ? "" : " (last kernel launched: '" + kernel + "')") + "\n  " +
      (checkpointed > 0 ? "the checkpoint of epoch " + std::to_string(checkpointed) + " in " + out_dir +
                              " is intact: continue with --resume"
                        : std::string("no checkpoint was written yet")) +
      (KernelCheck::installed() ? std::string() : "; rerun with FOXRL_CHECK_KERNELS=1 to name the failing kernel"));
}

}  // namespace foxrl::detail
