#pragma once
// The manifest of a study (a seed study, `foxrl train --seeds`, or a
// walk-forward, `foxrl train --walk-forward`): out_dir/study_manifest.json,
// written atomically before the first seed or fold starts, so that a study
// killed at any point knows what it was asked to do:
//
//   {"format": "foxrl-study", "format_version": 1, "kind": "seeds",
//    "config": {...the resolved config: --config file, --set on top...},
//    "seeds": [1, 2, 3], "crc32c": "..."}
//   {"format": "foxrl-study", "format_version": 1, "kind": "walk_forward",
//    "config": {...}, "walk_forward": "train=600,test=300,step=300",
//    "folds": [{"fold": 0, "start_date": ..., "train_end": ...,
//               "test_start": ..., "test_end": ...}, ...], "crc32c": "..."}
//
// A resume (`--resume`, `--auto-resume`) takes the config from here, never
// from the defaults, and refuses a command line that asks for another
// study (train/resume rules: only epochs may grow; seeds may be appended).
// The checksum covers every other field, as checkpoint.json's does.

#include "config/train_config.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace foxrl {

/// One walk-forward fold as the config keys that make it.
struct StudyFoldDates {
  int fold = 0;
  std::string start_date, train_end, test_start, test_end;
  bool operator==(const StudyFoldDates& o) const {
    return fold == o.fold && start_date == o.start_date && train_end == o.train_end && test_start == o.test_start &&
           test_end == o.test_end;
  }
};

struct StudyManifest {
  static constexpr const char* file = "study_manifest.json";
  static constexpr int format_version = 1;
  enum class Kind { seeds, walk_forward };

  Kind kind = Kind::seeds;
  /// The study's config (out_dir: the study's directory; seed: as given,
  /// each seed of a seed study replaces it).
  TrainConfig config;
  std::vector<std::uint64_t> seeds;   ///< kind seeds: in the order of --seeds
  std::string walk_forward;           ///< kind walk_forward: the spec as written, "train=..,test=..,step=.."
  std::vector<StudyFoldDates> folds;  ///< kind walk_forward

  /// "seed study" or "walk-forward", for messages.
  std::string kind_name() const;
  /// Writes `out_dir`/study_manifest.json atomically.
  void write(const std::string& out_dir) const;
  /// Reads `out_dir`/study_manifest.json: UsageError naming the file and
  /// field when it is damaged (checksum), of a newer format or malformed;
  /// nothing when there is no such file.
  static std::optional<StudyManifest> read_if_present(const std::string& out_dir);
  static std::string path_in(const std::string& out_dir) { return out_dir + "/" + file; }
};

/// The config a study resumed in `out_dir` runs: `manifest`'s, or with
/// `from_file` the given `requested` (a --config file), `overrides` on top
/// either way; UsageError naming the key (as a run's resume does) when it
/// differs from the manifest's in anything but epochs (which may grow),
/// out_dir and keep_checkpoints.
TrainConfig resumed_study_config(const StudyManifest& manifest, const TrainConfig& requested, bool from_file,
                                 const std::vector<std::string>& overrides, const std::string& out_dir);

}  // namespace foxrl
