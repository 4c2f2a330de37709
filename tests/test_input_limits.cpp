// Bounded inputs and the exit codes of refused input (issue 50, findings
// 3, 5, 6 and 8): sizes checked before allocation, capped reads of config
// and market files, newer checkpoint formats refused without touching the
// run, and values outside the documented ranges refused by name (exit 2).
#include "config/config_table.hpp"
#include "config/offline_train_config.hpp"
#include "config/train_config.hpp"
#include "core/device_memory.hpp"
#include "core/error.hpp"
#include "evaluate/collect_dataset.hpp"
#include "market/market_data.hpp"
#include "study/seed_study.hpp"
#include "support/cli_process.hpp"
#include "support/env_test_util.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using Catch::Contains;
using foxrl::test::CliResult;
using foxrl::test::run_foxrl;
using foxrl::test::TempDir;

/// A CartPole run of one short epoch (checkpoints every epoch).
const std::string tiny_run =
    "train --set env=cartpole --set num_envs=2 --set hidden=8 --set batch_size=8 --set buffer_capacity=64 "
    "--set learning_starts=16 --set iterations_per_epoch=10";

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const foxrl::UsageError& e) {
    return e.what();
  }
  return "(no UsageError)";
}

}  // namespace

TEST_CASE("collect refuses --steps past the memory and the row limit before any allocation", "[limits]") {
  foxrl::MemoryInfo memory{true, 1000 * 42, 2000 * 42, "host"};  // 42 bytes per CartPole transition
  CHECK_NOTHROW(foxrl::detail::check_collect_size(1000, 4, memory));
  CHECK_THAT(message_of([&] { foxrl::detail::check_collect_size(1001, 4, memory); }),
             Contains("--steps 1001 is more than the limit of 1000 transitions") && Contains("42 bytes"));
  // No product of the request is formed: the largest int64 is compared, not multiplied.
  CHECK_THAT(message_of([&] { foxrl::detail::check_collect_size(INT64_MAX, 4, memory); }),
             Contains("--steps 9223372036854775807 is more than the limit of 1000"));
  const foxrl::MemoryInfo unknown{};
  CHECK_THAT(message_of([&] { foxrl::detail::check_collect_size(INT64_MAX, 4, unknown); }),
             Contains("limit of " + std::to_string(foxrl::detail::kMaxCollectTransitions)));
#ifdef FOXRL_CLI_PATH
  TempDir dir;
  const CliResult r = run_foxrl(
      dir, "collect --set env=cartpole --steps 9223372036854775807 --out \"" + dir.file("x.safetensors") + "\"");
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("--steps 9223372036854775807 is more than the limit of"));
  CHECK_FALSE(fs::exists(dir.file("x.safetensors")));
#endif
}

TEST_CASE("a config file past the size cap is refused at once, naming the file and the cap", "[limits][config]") {
  TempDir dir;
  const std::string big =
      dir.write("big.json", "{\"lr\": 0.001" + std::string(foxrl::config_detail::kMaxConfigFileBytes, ' ') + "}");
  CHECK_THAT(message_of([&] { (void)foxrl::TrainConfig::from_json_file(big); }),
             Contains(big + ": the config file is larger than the limit of 1024 KiB"));
  CHECK_THAT(message_of([&] { (void)foxrl::OfflineTrainConfig::from_json_file(big); }),
             Contains("larger than the limit"));
  if (fs::exists("/dev/zero")) {
    CHECK_THAT(message_of([&] { (void)foxrl::TrainConfig::from_json_file("/dev/zero"); }),
               Contains("/dev/zero: the config file is larger than the limit"));
  }
  // A config just under the cap still reads.
  const std::string fits = dir.write("fits.json", "{\"lr\": 0.001}" + std::string(1000, '\n'));
  CHECK(foxrl::TrainConfig::from_json_file(fits).lr == 0.001);
}

TEST_CASE("market data is read line by line: an overlong line, a device and a directory are refused",
          "[limits][market]") {
  TempDir dir;
  const std::string long_line =
      dir.write("long.csv", "timestamp,open,high,low,close,volume," + std::string(2 << 20, 'x') + "\n1,1,1,1,1,1\n");
  CHECK_THAT(message_of([&] { (void)foxrl::load_market_csv(long_line); }),
             Contains(long_line + ":1: line is longer than the limit of 1048576 bytes"));
  if (fs::exists("/dev/zero")) {
    CHECK_THAT(message_of([&] { (void)foxrl::load_market_csv("/dev/zero"); }),
               Contains("/dev/zero:1: line is longer than the limit"));
  }
  if (fs::exists("/dev/urandom")) {  // refused at its first line, a header without the columns
    CHECK_THAT(message_of([&] { (void)foxrl::load_market_csv("/dev/urandom"); }), Contains("/dev/urandom:"));
  }
  CHECK_THAT(message_of([&] { (void)foxrl::load_market_csv(dir.path()); }),
             Contains(dir.path() + ": cannot read market data file"));
  // The reader keeps the loader's forms: a byte-order mark, CRLF, no final newline.
  const std::string ok = dir.write("ok.csv",
                                   "\xEF\xBB\xBFtimestamp,open,high,low,close,volume\r\n"
                                   "2020-01-01,1,2,0.5,1.5,10\r\n2020-01-02,1.5,2,1,1.8,12");
  const auto series = foxrl::load_market_csv(ok);
  REQUIRE(series.size() == 2);
  CHECK(series.close[1] == 1.8);
}

TEST_CASE("lr, adam_eps and hidden are refused outside their documented ranges by key", "[limits][config]") {
  foxrl::TrainConfig c;
  CHECK_THAT(message_of([&] { c.apply_overrides({"lr=0"}); }),
             Contains("key 'lr': value 0 is out of range [1e-10, 1]"));
  CHECK_THAT(message_of([&] { c.apply_overrides({"adam_eps=0"}); }),
             Contains("key 'adam_eps': value 0 is out of range [1e-30, 1]"));
  CHECK_THAT(message_of([&] { c.apply_overrides({"hidden=8,8,8,8,8,8,8,8"}); }),
             Contains("key 'hidden': 8 layers, at most 7 are allowed"));
  CHECK_NOTHROW(c.apply_overrides({"lr=1e-10", "adam_eps=1e-30", "hidden=8,8,8,8,8,8,8"}));
  foxrl::OfflineTrainConfig o;
  o.dataset = "d.safetensors";
  CHECK_THAT(message_of([&] { o.apply_overrides({"lr=0"}); }), Contains("key 'lr'"));
  o.hidden.assign(8, 8);
  CHECK_THAT(message_of([&] { o.validate(); }), Contains("key 'hidden': 8 layers"));
  // --help-config states every limit.
  CHECK_THAT(foxrl::TrainConfig::describe(), Contains("lr = 0.00025  [1e-10, 1]") &&
                                                 Contains("adam_eps = 1e-08  [1e-30, 1]") &&
                                                 Contains("(1 to 7 layers)"));
  CHECK_THAT(foxrl::OfflineTrainConfig::describe(), Contains("(1 to 7 layers)"));
}

TEST_CASE("seed study seeds past the config key's bound are refused before any run", "[limits][seed_study]") {
  CHECK_THAT(message_of([] { (void)foxrl::parse_seed_list("18446744073709551615"); }),
             Contains("'18446744073709551615'") && Contains("from 0 to 18000000000000000000"));
  CHECK(foxrl::parse_seed_list("18000000000000000000").front() == foxrl::kMaxSeed);
#ifdef FOXRL_CLI_PATH
  TempDir dir;
  const CliResult r = run_foxrl(
      dir, tiny_run + " --set epochs=1 --seeds 18446744073709551615 --set out_dir=\"" + dir.file("study") + "\"");
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK_FALSE(fs::exists(dir.file("study")));
#endif
}

#ifdef FOXRL_CLI_PATH
TEST_CASE("bootstrap seeds outside 0 .. 2^64 - 1 and an empty seed list are refused", "[limits][cli]") {
  TempDir dir;
  const std::string study = tiny_run + " --set epochs=1 --set out_dir=\"" + dir.file("study") + "\"";
  for (const char* bad : {"-1", "18446744073709551616", "1e3", ""}) {
    const CliResult r = run_foxrl(dir, study + " --seeds 1 --bootstrap-seed \"" + bad + "\"");
    INFO(bad << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains("--bootstrap-seed"));
  }
  const CliResult empty = run_foxrl(dir, study + " --seeds \"\"");
  INFO(empty.err);
  CHECK(empty.exit_code == 2);
  CHECK_THAT(empty.err, Contains("--seeds: is empty"));
  CHECK_FALSE(fs::exists(dir.file("study")));  // no plain run either
}

TEST_CASE("a megabyte path is quoted as an excerpt, never echoed whole", "[limits][cli]") {
  TempDir dir;
  const std::string path = "/nonexistent/" + std::string(1000000, 'a');
  dir.write("long.json", "{\"data\": \"" + path + "\"}");
  const CliResult r = run_foxrl(dir, "train --config \"" + dir.file("long.json") + "\"");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("cannot open market data file") && Contains("(1000013 bytes)"));
  CHECK(r.err.size() < 1000);
}

TEST_CASE("an output file that names a directory is refused with exit 2", "[limits][cli]") {
  TempDir dir;
  fs::create_directories(dir.file("out"));
  const std::string data = dir.file("a.safetensors");
  REQUIRE(run_foxrl(dir, "collect --set env=cartpole --set num_envs=2 --steps 10 --out \"" + data + "\"").exit_code ==
          0);
  const CliResult collect =
      run_foxrl(dir, "collect --set env=cartpole --set num_envs=2 --steps 10 --out \"" + dir.file("out") + "\"");
  CHECK(collect.exit_code == 2);
  CHECK_THAT(collect.err, Contains("is a directory, not a file name"));
  const CliResult merge =
      run_foxrl(dir, "dataset merge \"" + data + "\" \"" + data + "\" --out \"" + dir.file("out") + "\"");
  CHECK(merge.exit_code == 2);
  CHECK_THAT(merge.err, Contains("--out") && Contains("is a directory, not a file name"));
}

TEST_CASE("a checkpoint of a newer format is refused on resume and nothing is set aside", "[limits][resume][cli]") {
  TempDir dir;
  const std::string run = dir.file("run");
  REQUIRE(run_foxrl(dir, tiny_run + " --set epochs=2 --set out_dir=\"" + run + "\"").exit_code == 0);
  const std::string manifest = run + "/checkpoints/epoch-00000002/checkpoint.json";
  std::string text;
  {
    std::ifstream in(manifest);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const auto at = text.find("\"format_version\": 2");
  REQUIRE(at != std::string::npos);
  text.replace(at, 19, "\"format_version\": 3");
  std::ofstream(manifest) << text;
  const std::vector<std::string> starts = {"--resume", "--auto-resume",
                                           "--resume --config \"" + run + "/config.json\""};
  for (const std::string& how : starts) {
    const CliResult r = run_foxrl(dir, "train " + how + " --set out_dir=\"" + run + "\" --set epochs=3");
    INFO(how << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Contains(manifest + ": format_version 3 is newer than this foxrl reads (1 to 2)"));
  }
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(run + "/checkpoints")) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"epoch-00000001", "epoch-00000002"});
}

TEST_CASE("a run stopped before its first checkpoint names the commands that start it again", "[limits][cli]") {
  TempDir dir;
  const std::string run = dir.file("run");
  fs::create_directories(run);
  std::ofstream(run + "/train.log") << "foxrl 0.1.0 train: cartpole\n";
  std::ofstream(run + "/metrics.jsonl");
  const CliResult fresh = run_foxrl(dir, tiny_run + " --set epochs=1 --set out_dir=\"" + run + "\"");
  INFO(fresh.err);
  CHECK(fresh.exit_code == 2);
  CHECK_THAT(fresh.err, Contains("stopped before its first checkpoint") && Contains("--overwrite"));
  CHECK_THAT(fresh.err, !Contains("train --resume"));
  // The command it names works.
  CHECK(run_foxrl(dir, tiny_run + " --set epochs=1 --auto-resume --set out_dir=\"" + run + "\"").exit_code == 0);
}

TEST_CASE("resuming a run the user cannot write is refused with exit 2", "[limits][resume][cli]") {
  TempDir dir;
  const std::string run = dir.file("run");
  REQUIRE(run_foxrl(dir, tiny_run + " --set epochs=1 --set out_dir=\"" + run + "\"").exit_code == 0);
  // Root writes anywhere: the resume runs as another user there.
  std::string as_other_user;
  if (::geteuid() == 0) {
    if (std::system("command -v setpriv > /dev/null 2>&1") != 0) {
      WARN("running as root without setpriv: the read-only resume is not checked");
      return;
    }
    as_other_user = "setpriv --reuid=65534 --regid=65534 --clear-groups";
  }
  fs::permissions(run, fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                  fs::perm_options::remove);
  // The temp directory must be reachable for the other user.
  fs::permissions(dir.path(), fs::perms::others_read | fs::perms::others_exec, fs::perm_options::add);
  const CliResult r = run_foxrl(dir, "train --resume --set out_dir=\"" + run + "\" --set epochs=2", as_other_user);
  fs::permissions(run, fs::perms::owner_write, fs::perm_options::add);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Contains("--resume: out_dir") && Contains("cannot create files"));
}
#endif
