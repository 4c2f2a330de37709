#include "envs/rollout.hpp"

#include "core/execution_context.hpp"
#include "core/strings.hpp"
#include "io/output_dir.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace foxrl {

std::vector<std::int32_t> read_action_file(const std::string& path, int num_actions) {
  std::ifstream in(path);
  if (!in) throw UsageError(path + ": cannot open the action file");
  std::vector<std::int32_t> actions;
  std::string line;
  std::size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line_no == 1 && line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);  // UTF-8 byte-order mark
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(t.c_str(), &end, 10);
    if (end != t.c_str() + t.size() || errno != 0 || v < 0 || v >= num_actions) {
      throw UsageError(path + ":" + std::to_string(line_no) + ": action " + quote_excerpt(t) +
                       " is not an integer in [0, " + std::to_string(num_actions) + ")");
    }
    actions.push_back(static_cast<std::int32_t>(v));
  }
  if (in.bad()) throw UsageError(path + ": cannot read the action file");
  if (actions.empty()) throw UsageError(path + ": no actions in the file");
  return actions;
}

std::vector<double> parse_initial_state(const std::string& text) {
  std::vector<double> values;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const std::string t = trim(item);
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    if (t.empty() || end != t.c_str() + t.size() || !std::isfinite(v)) {
      throw UsageError("--initial-state " + quote_excerpt(text) + ": expected comma-separated finite numbers (entry " +
                       std::to_string(values.size() + 1) + " is " + quote_excerpt(t) + ")");
    }
    values.push_back(v);
  }
  if (values.empty()) throw UsageError("--initial-state " + quote_excerpt(text) + ": no numbers");
  return values;
}

void write_rollout_csv(const std::string& path, const RolloutTrace& trace) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw UsageError(path + ": cannot open the output file for writing");
  std::fprintf(f, "step");
  for (int j = 0; j < trace.obs_dim; ++j) std::fprintf(f, ",obs_%d", j);
  std::fprintf(f, ",action,reward,terminated,truncated\n");
  for (std::size_t k = 0; k < trace.size(); ++k) {
    std::fprintf(f, "%zu", k);
    for (int j = 0; j < trace.obs_dim; ++j) {
      std::fprintf(f, ",%.9g",
                   static_cast<double>(
                       trace.observations[k * static_cast<std::size_t>(trace.obs_dim) + static_cast<std::size_t>(j)]));
    }
    std::fprintf(f, ",%d,%.9g,%d,%d\n", trace.actions[k], static_cast<double>(trace.rewards[k]),
                 static_cast<int>(trace.terminated[k]), static_cast<int>(trace.truncated[k]));
  }
  const bool ok = std::ferror(f) == 0;
  if (std::fclose(f) != 0 || !ok) throw Error(path + ": writing the rollout failed");
}

RolloutTrace run_rollout(const RolloutOptions& options) {
  const auto actions = read_action_file(options.actions_path, env_spaces(options.config).num_actions);
  if (!options.out_path.empty()) prepare_output_file_directory(options.out_path, "--out");
  RolloutTrace trace;
  {
    ExecutionContext<> context(options.config.seed);
    trace = rollout(context.space(), options, actions);
  }
  if (!options.out_path.empty()) write_rollout_csv(options.out_path, trace);
  return trace;
}

}  // namespace foxrl
