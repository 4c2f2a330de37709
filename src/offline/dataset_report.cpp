#include "offline/dataset_report.hpp"

#include "market/position_set.hpp"
#include "offline/dataset_file.hpp"
#include "offline/dataset_statistics.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

namespace foxrl {
namespace {

/// Six significant digits: rewards of CartPole print as integers, market
/// log returns readably.
std::string number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", x);
  return text;
}

/// A recorded number (metadata text) in six significant digits, or the
/// text as recorded if it is no number.
std::string number_text(const std::string& text) {
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  return !text.empty() && end == text.c_str() + text.size() ? number(x) : text;
}

std::string percent(std::int64_t part, std::int64_t whole) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", whole > 0 ? 100.0 * double(part) / double(whole) : 0.0);
  return text;
}

/// The market env's actions by name (positions -1, 0, 1; long-only 0, 1).
std::string action_label(const DatasetFile& d, int a) {
  if (d.metadata.env != "market") return "";
  const PositionSet set = parse_position_set(d.metadata.config.positions);  // the config was validated
  return a >= 0 && a < position_set_actions(set) ? position_action_name(set, a) : "";
}

/// A metadata value as a JSON number when it is one, else as recorded.
nlohmann::ordered_json number_or_text(const std::string& text) {
  if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos && text.size() < 20)
    return std::stoull(text);
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  if (!text.empty() && end == text.c_str() + text.size() && std::isfinite(x)) return x;
  return text;
}

/// What the reader verified: files written before metadata checksums
/// existed have their tensors' checksums only.
std::string checksum_note(const safetensors::File& f) {
  if (!f.checksummed) return f.metadata_checksummed ? "metadata checksum verified" : "no checksums";
  return f.metadata_checksummed ? "checksums verified"
                                : "tensor checksums verified; metadata not checksummed (an older file)";
}

nlohmann::ordered_json summary_json(const SummaryStatistics& s) {
  return {{"count", s.count}, {"mean", s.mean}, {"std", s.std}, {"min", s.min}, {"max", s.max}};
}

void print_json(std::ostream& out, const DatasetFile& d, const DatasetStatistics& s) {
  const DatasetMetadata& m = d.metadata;
  nlohmann::ordered_json j;
  j["file"] = d.path;
  j["checksummed"] = d.file.checksummed;
  j["metadata_checksummed"] = d.file.metadata_checksummed;
  j["sha256"] = d.sha256;
  j["env"] = m.env;
  j["transitions"] = s.transitions;
  j["obs_dim"] = s.obs_dim;
  j["num_actions"] = s.num_actions;
  j["num_envs"] = s.num_envs;
  j["policy"] = m.policy;
  j["epsilon"] = number_or_text(m.epsilon);
  j["seed"] = number_or_text(m.seed);
  if (!m.split.empty()) j["split"] = m.split;
  j["normalizer"] = d.normalizer.has_value();
  j["terminated"] = s.terminated;
  j["truncated"] = s.truncated;
  nlohmann::ordered_json episodes;
  episodes["exact"] = s.episodes_exact;
  if (s.episodes_exact) {
    episodes["complete"] = s.returns.count;
    episodes["unfinished"] = s.unfinished;
    episodes["return"] = summary_json(s.returns);
    episodes["length"] = summary_json(s.lengths);
  } else {
    episodes["why"] = s.why;
  }
  j["episodes"] = episodes;
  j["action_counts"] = s.action_counts;
  out << j.dump(2) << "\n";
}

void print_text(std::ostream& out, const DatasetFile& d, const DatasetStatistics& s) {
  const DatasetMetadata& m = d.metadata;
  out << "dataset:           " << d.path << " (" << checksum_note(d.file) << ")\n";
  out << "sha256:            " << d.sha256 << "\n";
  out << "env:               " << m.env << (m.split.empty() ? "" : ", split " + m.split) << ", " << s.num_envs << " env"
      << (s.num_envs == 1 ? "" : "s") << " side by side\n";
  out << "policy:            " << (m.policy.empty() ? "(not recorded)" : m.policy)
      << (m.policy == "epsilon-greedy" ? ", epsilon " + number_text(m.epsilon) : "")
      << (m.seed.empty() ? "" : ", seed " + m.seed) << (m.run.empty() ? "" : ", run " + m.run) << "\n";
  out << "transitions:       " << s.transitions << "\n";
  out << "observation dim:   " << s.obs_dim << (d.normalizer ? " (normaliser statistics included)" : "") << "\n";
  out << "actions:           " << s.num_actions << "\n";
  out << "terminated:        " << s.terminated << " (" << percent(s.terminated, s.transitions) << ")\n";
  out << "truncated:         " << s.truncated << " (" << percent(s.truncated, s.transitions) << ")\n";
  if (s.episodes_exact) {
    out << "episodes:          " << s.returns.count << " complete, " << s.unfinished
        << " unfinished at the end of the recording (not counted)\n";
    if (s.returns.count > 0) {
      out << "episode return:    mean " << number(s.returns.mean) << ", std " << number(s.returns.std) << ", min "
          << number(s.returns.min) << ", max " << number(s.returns.max) << "\n";
      out << "episode length:    mean " << number(s.lengths.mean) << ", std " << number(s.lengths.std) << ", min "
          << number(s.lengths.min) << ", max " << number(s.lengths.max) << "\n";
    }
  } else {
    out << "episodes:          cannot be reconstructed exactly: " << s.why << "\n";
  }
  out << "action histogram:\n";
  for (int a = 0; a < s.num_actions; ++a) {
    const std::int64_t n = s.action_counts[static_cast<std::size_t>(a)];
    const std::string label = action_label(d, a);
    const int bar = static_cast<int>(std::lround(40.0 * double(n) / double(s.transitions)));
    out << "  " << a << (label.empty() ? "" : " " + label) << ": " << n << " (" << percent(n, s.transitions) << ") "
        << std::string(static_cast<std::size_t>(bar), '#') << "\n";
  }
}

}  // namespace

std::string dataset_report(const std::string& path, bool json) {
  const DatasetFile dataset = read_dataset_file(path);
  const DatasetStatistics stats = dataset_statistics(dataset);
  std::ostringstream out;
  if (json) {
    print_json(out, dataset, stats);
  } else {
    print_text(out, dataset, stats);
  }
  return out.str();
}

}  // namespace foxrl
