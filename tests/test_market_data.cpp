// The OHLCV CSV loader: good files in several shapes, every kind of bad
// input (the message must name the line, the column and the value), skip
// mode, the shared real data sets and corrupted copies of them.
#include "core/error.hpp"
#include "market/market_data.hpp"
#include "support/env_test_util.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

// ":N:" as the loader writes line numbers. (Built by append: GCC 12's
// -Wrestrict misfires on "literal" + std::string in C++20.)
std::string line_tag(std::size_t line) {
  std::string s(":");
  s.append(std::to_string(line)).append(":");
  return s;
}

std::string load_error(const std::string& path, const foxrl::LoadOptions& options = {}) {
  try {
    foxrl::load_market_csv(path, options);
  } catch (const foxrl::UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

std::string join(const std::vector<std::string>& lines, bool final_newline = true) {
  std::string s;
  for (std::size_t i = 0; i < lines.size(); ++i) s += lines[i] + (i + 1 < lines.size() || final_newline ? "\n" : "");
  return s;
}

}  // namespace

TEST_CASE("timestamps: ISO-8601 forms and unix seconds", "[market_data]") {
  CHECK(foxrl::parse_timestamp("2017-01-02T07:00:00Z") == 1483340400);
  CHECK(foxrl::parse_timestamp("2017-01-02 07:00:00") == 1483340400);
  CHECK(foxrl::parse_timestamp("2017-01-02T07:00") == 1483340400);
  CHECK(foxrl::parse_timestamp("2017-01-02 07:00Z") == 1483340400);
  CHECK(foxrl::parse_timestamp("1483340400") == 1483340400);
  CHECK(foxrl::parse_timestamp("1950-01-03") == -630979200);
  CHECK(foxrl::parse_timestamp("2024-02-29T23:59:58Z") == 1709251198);
  CHECK(foxrl::format_timestamp(1709251198) == "2024-02-29T23:59:58Z");
  CHECK(foxrl::format_timestamp(-630979200) == "1950-01-03T00:00:00Z");
  for (const char* bad :
       {"2023-02-29", "2017-13-01", "2017-01-02T25:00:00Z", "2017/01/02", "yesterday", "", "2017-01-02T07", "12.5"}) {
    INFO(bad);
    CHECK_THROWS_AS(foxrl::parse_timestamp(bad), foxrl::UsageError);
  }
}

TEST_CASE("timestamps: UTC offsets, fractional seconds, unix milliseconds", "[market_data]") {
  // 2017-01-02T07:00:00Z = 1483340400; an offset says the local time is that
  // far ahead of UTC, so UTC = local - offset.
  CHECK(foxrl::parse_timestamp("2017-01-02T07:00:00+00:00") == 1483340400);
  CHECK(foxrl::parse_timestamp("2017-01-02T08:00:00+01:00") == 1483340400);
  CHECK(foxrl::parse_timestamp("2017-01-02 02:00:00-05:00") == 1483340400);
  CHECK(foxrl::parse_timestamp("2017-01-02T12:30+05:30") == 1483340400);
  CHECK(foxrl::parse_timestamp("2017-01-02T12:30:00+0530") == 1483340400);
  // An offset can move the date: 2017-01-01T23:00-08:00 is 2017-01-02T07:00Z.
  CHECK(foxrl::parse_timestamp("2017-01-01T23:00:00-08:00") == 1483340400);
  // Fractions are cut to the second, with or without an offset after them.
  CHECK(foxrl::parse_timestamp("2017-01-02T07:00:00.999Z") == 1483340400);
  CHECK(foxrl::parse_timestamp("2017-01-02 07:00:00.5") == 1483340400);
  CHECK(foxrl::parse_timestamp("2017-01-02T07:00:01.000000001+00:00") == 1483340401);
  CHECK(foxrl::parse_timestamp("2017-01-02T08:00:00,25+01:00") == 1483340400);
  // 13 digits are milliseconds (floored to the second), up to 12 seconds.
  CHECK(foxrl::parse_timestamp("1483340400000") == 1483340400);
  CHECK(foxrl::parse_timestamp("1483340400999") == 1483340400);
  CHECK(foxrl::parse_timestamp("0001483340400") == 1483340);  // 13 digits: milliseconds, leading zeros too
  CHECK(foxrl::parse_timestamp("148334040000") == 148334040000);
  for (const char* bad :
       {"2017-01-02T07:00:00+24:00", "2017-01-02T07:00:00+01:60", "2017-01-02T07:00:00+1:00", "2017-01-02T07:00:00+01",
        "2017-01-02T07:00:00+01:00Z", "2017-01-02+01:00", "2017-01-02T07:00.5", "2017-01-02T07:00:00.",
        "2017-01-02T07:00:00.1234567890", "2017-01-02T07:00:00.5x", "14833404000000", "1483340400.5"}) {
    INFO(bad);
    CHECK_THROWS_AS(foxrl::parse_timestamp(bad), foxrl::UsageError);
  }
  try {
    foxrl::parse_timestamp("2017-01-02T07:00:00+25:00");
    FAIL("no error");
  } catch (const foxrl::UsageError& e) {
    CHECK_THAT(e.what(), Catch::Contains("'2017-01-02T07:00:00+25:00'") && Catch::Contains("+HH:MM") &&
                             Catch::Contains("milliseconds"));
  }
}

TEST_CASE("loader reads quoted fields, offsets, fractions, milliseconds and a BOM", "[market_data]") {
  foxrl::test::TempDir dir;
  // Every field quoted, a quoted header, a comma and an escaped quote inside
  // an ignored column, spaces around quotes.
  const std::string quoted =
      dir.write("quoted.csv",
                "\xEF\xBB\xBF\"Date\",\"Open\",\"High\",\"Low\",\"Close\",\"Note\",\"Volume\"\r\n"
                "\"2020-01-01T00:00:00+00:00\",\"10\",\"11\",\"9\",\"10.5\",\"a, \"\"b\"\"\",\"100\"\r\n"
                " \"2020-01-01T02:00:00.750+01:00\" , 10.5,\" 11 \",10,10.25,\"\",0\r\n");
  const auto q = foxrl::load_market_csv(quoted);
  REQUIRE(q.size() == 2);
  CHECK(q.timestamp[0] == 1577836800);
  CHECK(q.timestamp[1] == 1577836800 + 3600);
  CHECK(q.open[0] == 10.0);
  CHECK(q.close[0] == 10.5);
  CHECK(q.volume[0] == 100.0);
  CHECK(q.high[1] == 11.0);
  // Unix milliseconds as exchanges export them.
  const std::string millis = dir.write("millis.csv",
                                       "timestamp,open,high,low,close,volume\n"
                                       "1577836800000,10,11,9,10.5,1\n"
                                       "1577836860000,10.5,11,10,10.75,1\n");
  const auto m = foxrl::load_market_csv(millis);
  REQUIRE(m.size() == 2);
  CHECK(m.timestamp[0] == 1577836800);
  CHECK(m.timestamp[1] == 1577836860);
  // Sub-second bars collide once cut to the second: refused as duplicates.
  const std::string sub = dir.write("sub.csv",
                                    "timestamp,open,high,low,close,volume\n"
                                    "2020-01-01T00:00:00.100Z,10,11,9,10.5,1\n"
                                    "2020-01-01T00:00:00.600Z,10,11,9,10.5,1\n");
  CHECK_THAT(load_error(sub), Catch::Contains(":3:") && Catch::Contains("duplicates"));
}

TEST_CASE("loader names the line, column and value of bad quotes and bad new timestamp forms", "[market_data]") {
  foxrl::test::TempDir dir;
  const std::string header = "timestamp,open,high,low,close,volume\n";
  const std::string good = "2020-01-01,10,11,9,10.5,100\n";
  struct Case {
    const char* what;
    std::string body;
    std::vector<std::string> expected;
  };
  const std::vector<Case> cases = {
      {"unclosed quote", "2020-01-02,\"10,11,9,10.5,100\n", {":3:", "column 2", "not closed", "'2020-01-02,\"10"}},
      {"text after a closing quote", "2020-01-02,\"10\"x,11,9,10.5,100\n", {":3:", "column 2", "closing quote"}},
      {"bad offset",
       "2020-01-02T00:00+25:00,10,11,9,10.5,100\n",
       {":3:", "column 1 (timestamp)", "'2020-01-02T00:00+25:00'", "+HH:MM"}},
      {"fraction without seconds",
       "2020-01-02T00:00.5,10,11,9,10.5,100\n",
       {":3:", "column 1 (timestamp)", "'2020-01-02T00:00.5'"}},
      {"14-digit epoch",
       "15779232000000,10,11,9,10.5,100\n",
       {":3:", "column 1 (timestamp)", "'15779232000000'", "milliseconds"}},
      {"quoted bad number",
       "2020-01-02,\"1,000\",11,9,10.5,100\n",
       {":3:", "column 2 (open)", "'1,000'", "not a number"}},
      {"offset time going backwards",
       "2020-01-01T01:00:00+02:00,10,11,9,10.5,100\n",
       {":3:", "column 1 (timestamp)", "'2020-01-01T01:00:00+02:00' (2019-12-31T23:00:00Z) is earlier",
        "(2020-01-01T00:00:00Z)"}},
  };
  for (const auto& c : cases) {
    const std::string path = dir.write("bad.csv", header + good + c.body);
    const std::string msg = load_error(path);
    INFO(c.what << ": " << msg);
    CHECK_THAT(msg, Catch::Contains(path));
    for (const auto& e : c.expected) CHECK_THAT(msg, Catch::Contains(e));
  }
  // The header's quotes too, and skip mode counts bad quotes by reason.
  const std::string bad_header = load_error(dir.write("bad_header.csv", "\"timestamp,open,high,low,close,volume\n"));
  CHECK_THAT(bad_header, Catch::Contains(":1: header column 1") && Catch::Contains("not closed"));
  foxrl::LoadOptions skip;
  skip.skip_bad_rows = true;
  foxrl::LoadReport report;
  const std::string mixed = dir.write("mixed.csv", header + good + "2020-01-02,\"10,11,9,10.5,100\n");
  CHECK(foxrl::load_market_csv(mixed, skip, &report).size() == 1);
  CHECK(report.skipped["bad_quote"] == 1);
}

TEST_CASE("loader reads good files: column order, case, extra columns, CRLF, timestamp forms", "[market_data]") {
  foxrl::test::TempDir dir;
  const std::string path = dir.write("good.csv",
                                     "Volume, Close ,Adj Close,LOW,High,Open,Date\r\n"
                                     "100,10.5,1,9.5,11,10,2020-01-01\r\n"
                                     "\r\n"
                                     "0,10.25,1,10,10.75,10.5,2020-01-02 00:00:01\r\n"
                                     "7.5,10.25,1,10.25,10.25,10.25,1577923202\r\n");
  foxrl::LoadReport report;
  const auto s = foxrl::load_market_csv(path, {}, &report);
  REQUIRE(s.size() == 3);
  CHECK(report.rows_loaded == 3);
  CHECK(report.data_lines == 3);
  CHECK(s.timestamp[0] == 1577836800);
  CHECK(s.timestamp[1] == 1577923201);
  CHECK(s.timestamp[2] == 1577923202);
  CHECK(s.open[0] == 10.0);
  CHECK(s.high[0] == 11.0);
  CHECK(s.low[0] == 9.5);
  CHECK(s.close[0] == 10.5);
  CHECK(s.volume[0] == 100.0);
  CHECK(s.volume[1] == 0.0);  // zero volume is valid (FX, indices)
  CHECK(s.volume[2] == 7.5);
  // No trailing newline is fine too.
  const std::string p2 = dir.write("no_newline.csv", "timestamp,open,high,low,close,volume\n2020-01-01,1,1,1,1,0");
  CHECK(foxrl::load_market_csv(p2).size() == 1);
}

TEST_CASE("loader rejects each kind of bad input naming line, column and value", "[market_data]") {
  foxrl::test::TempDir dir;
  const std::string header = "timestamp,open,high,low,close,volume\n";
  const std::string good = "2020-01-01,10,11,9,10.5,100\n";
  struct Case {
    const char* what;
    std::string body;  // after the header and one good row (line 2), so the bad row is line 3
    std::vector<std::string> expected;
  };
  const std::vector<Case> cases = {
      {"non-numeric price", "2020-01-02,10,abc,9,10.5,100\n", {":3:", "column 3 (high)", "'abc'", "not a number"}},
      {"empty field", "2020-01-02,10,11,,10.5,100\n", {":3:", "column 4 (low)", "''"}},
      {"NaN", "2020-01-02,10,11,9,nan,100\n", {":3:", "column 5 (close)", "'nan'", "not finite"}},
      {"Inf", "2020-01-02,10,11,9,10,inf\n", {":3:", "column 6 (volume)", "'inf'", "not finite"}},
      {"overflow", "2020-01-02,1e999,11,9,10,1\n", {":3:", "column 2 (open)", "'1e999'", "not finite"}},
      {"zero price", "2020-01-02,0,11,9,10,100\n", {":3:", "column 2 (open)", "'0'", "not positive"}},
      {"negative price", "2020-01-02,10,11,-9,10,100\n", {":3:", "column 4 (low)", "'-9'", "not positive"}},
      {"negative volume", "2020-01-02,10,11,9,10,-1\n", {":3:", "column 6 (volume)", "'-1'", "negative"}},
      {"high < low", "2020-01-02,10,9,11,10,1\n", {":3:", "column 3 (high)", "'9'", "low '11'"}},
      {"high < max(open, close)", "2020-01-02,10,11,9,12,1\n", {":3:", "column 3 (high)", "'11'", "close '12'"}},
      {"low > min(open, close)", "2020-01-02,8,11,9,10,1\n", {":3:", "column 4 (low)", "'9'", "open '8'"}},
      {"duplicated timestamp",
       "2020-01-01,10,11,9,10.5,100\n",
       {":3:", "column 1 (timestamp)", "'2020-01-01'", "duplicates"}},
      {"earlier timestamp",
       "2019-12-31,10,11,9,10.5,100\n",
       {":3:", "column 1 (timestamp)", "'2019-12-31'", "earlier"}},
      {"bad timestamp", "2020-02-30,10,11,9,10.5,100\n", {":3:", "column 1 (timestamp)", "'2020-02-30'"}},
      {"too few fields (truncated last line)",
       "2020-01-02,10,11",
       {":3:", "expected 6 fields", "found 3", "'2020-01-02,10,11'"}},
      {"too many fields", "2020-01-02,10,11,9,10.5,100,7\n", {":3:", "found 7"}},
  };
  for (const auto& c : cases) {
    const std::string path = dir.write("bad.csv", header + good + c.body);
    const std::string msg = load_error(path);
    INFO(c.what << ": " << msg);
    CHECK_THAT(msg, Catch::Contains(path));
    for (const auto& e : c.expected) CHECK_THAT(msg, Catch::Contains(e));
  }
  // File-level problems.
  CHECK_THAT(load_error(dir.write("empty.csv", "")), Catch::Contains("empty file"));
  CHECK_THAT(load_error(dir.write("blank.csv", "\n\n")), Catch::Contains("empty file"));
  CHECK_THAT(load_error(dir.write("header_only.csv", header)), Catch::Contains("no data rows"));
  const std::string missing = load_error(dir.write("missing.csv", "timestamp,open,high,close\n2020-01-01,1,1,1\n"));
  CHECK_THAT(missing, Catch::Contains(":1:") && Catch::Contains("low, volume"));
  CHECK_THAT(load_error(dir.write("dup.csv", "timestamp,open,high,low,close,volume,Open\n")), Catch::Contains("twice"));
  CHECK_THAT(load_error(dir.file("does_not_exist.csv")), Catch::Contains("cannot open"));
}

TEST_CASE("loader skip mode drops bad rows and counts them per reason", "[market_data]") {
  foxrl::test::TempDir dir;
  const std::string path = dir.write("mixed.csv",
                                     "timestamp,open,high,low,close,volume\n"
                                     "2020-01-01,10,11,9,10.5,100\n"
                                     "2020-01-02,10,abc,9,10.5,100\n"
                                     "2020-01-02,10,9,11,10,1\n"
                                     "2020-01-01,10,11,9,10.5,100\n"
                                     "2020-01-03,10,11,9,10.5,100\n"
                                     "2020-01-04,10,11,9,10.5,-5\n"
                                     "2020-01-05,10,11\n");
  foxrl::LoadOptions options;
  options.skip_bad_rows = true;
  foxrl::LoadReport report;
  const auto s = foxrl::load_market_csv(path, options, &report);
  CHECK(s.size() == 2);
  CHECK(report.data_lines == 7);
  CHECK(report.rows_loaded == 2);
  CHECK(report.rows_skipped() == 5);
  CHECK(report.skipped["non_numeric"] == 1);
  CHECK(report.skipped["high_below_low"] == 1);
  CHECK(report.skipped["non_increasing_timestamp"] == 1);
  CHECK(report.skipped["negative_volume"] == 1);
  CHECK(report.skipped["field_count"] == 1);
  REQUIRE(report.first_messages.size() == 5);
  CHECK_THAT(report.first_messages[0], Catch::Contains(":3:"));
  // Without skipping the same file fails on line 3.
  CHECK_THAT(load_error(path), Catch::Contains(":3:"));
  // A file with no good row still fails.
  const std::string all_bad = dir.write("all_bad.csv", "timestamp,open,high,low,close,volume\n2020-01-01,x,1,1,1,1\n");
  CHECK_THROWS_WITH(foxrl::load_market_csv(all_bad, options), Catch::Contains("no valid data rows"));
}

TEST_CASE("every shared data file loads, and corrupted copies fail naming the line", "[market_data][shared]") {
  const std::filesystem::path data_dir(FOXRL_SHARED_DATA_DIR);
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(data_dir)) {
    for (const auto& e : std::filesystem::directory_iterator(data_dir)) {
      if (e.path().extension() == ".csv") files.push_back(e.path());
    }
  }
  if (files.empty()) {
    WARN("no shared market data in " << data_dir << ": skipped");
    return;
  }
  foxrl::test::TempDir dir;
  for (const auto& file : files) {
    INFO(file);
    // Known bad ticks: the loader refuses them by default, naming the row.
    foxrl::LoadOptions options;
    if (file.filename() == "btcusd_daily.csv") {
      // 2017-04-15: high 1190.99, low 0.06.
      CHECK_THAT(load_error(file.string()), Catch::Contains(line_tag(2069)) && Catch::Contains("column 3 (high)") &&
                                                Catch::Contains("low '0.06'") &&
                                                Catch::Contains("allow_implausible_bars"));
      options.allow_implausible_bars = true;
    }
    foxrl::LoadReport report;
    const auto s = foxrl::load_market_csv(file.string(), options, &report);
    CHECK(s.size() > 1000);
    CHECK(report.rows_skipped() == 0);
    const auto lines = read_lines(file.string());
    REQUIRE(lines.size() == s.size() + 1);
    for (std::size_t i = 1; i < s.size(); ++i) {
      if (!(s.timestamp[i] > s.timestamp[i - 1])) FAIL("timestamps not increasing at row " << i);
    }

    // Corruptions in the middle of the file (line numbers are 1-based, the
    // header is line 1) and at its end.
    const std::size_t mid = lines.size() / 2;  // 0-based index of a data line
    const std::string mid_line = line_tag(mid + 1);
    auto with_line = [&](std::size_t at, const std::string& replacement) {
      auto copy = lines;
      copy[at] = replacement;
      return copy;
    };
    auto fields = [&](std::size_t at) {
      std::vector<std::string> f;
      std::stringstream ss(lines[at]);
      std::string item;
      while (std::getline(ss, item, ',')) f.push_back(item);
      return f;
    };
    auto f = fields(mid);
    REQUIRE(f.size() == 6);

    const std::string non_numeric = dir.write(
        "non_numeric.csv", join(with_line(mid, f[0] + "," + f[1] + ",12x.5," + f[3] + "," + f[4] + "," + f[5])));
    std::string msg = load_error(non_numeric, options);
    CHECK_THAT(msg, Catch::Contains(mid_line) && Catch::Contains("'12x.5'") && Catch::Contains("high"));

    const std::string high_low = dir.write(
        "high_low.csv", join(with_line(mid, f[0] + "," + f[1] + "," + f[3] + "," + f[2] + "," + f[4] + "," + f[5])));
    msg = load_error(high_low, options);
    // Swapping high and low of a bar with a range makes high < low; a flat
    // bar stays valid, so the message is checked only for real ranges.
    if (std::stod(f[2]) > std::stod(f[3])) {
      CHECK_THAT(msg, Catch::Contains(mid_line) && Catch::Contains("high '" + f[3] + "'"));
    }

    auto dup = lines;
    dup[mid + 1] = f[0] + dup[mid + 1].substr(dup[mid + 1].find(','));
    msg = load_error(dir.write("duplicate.csv", join(dup)), options);
    CHECK_THAT(
        msg, Catch::Contains(line_tag(mid + 2)) && Catch::Contains("duplicates") && Catch::Contains("'" + f[0] + "'"));

    auto truncated = lines;
    const std::string last = truncated.back();
    truncated.back() = last.substr(0, last.rfind(','));  // drop the last field
    msg = load_error(dir.write("truncated.csv", join(truncated, false)), options);
    CHECK_THAT(msg, Catch::Contains(line_tag(lines.size())) && Catch::Contains("expected 6 fields") &&
                        Catch::Contains("found 5"));
  }
}

TEST_CASE("loader refuses implausible bars naming the row, unless allowed", "[market_data]") {
  foxrl::test::TempDir dir;
  const std::string header = "timestamp,open,high,low,close,volume\n";
  const std::string good = "2020-01-01,10,11,9,10.5,100\n";
  // high 1e300 and low 1e-300 pass every per-field check and used to
  // poison a run that still exited 0.
  const std::string huge = dir.write("huge.csv", header + good + "2020-01-02,1,1e300,1e-300,1,100\n");
  CHECK_THAT(load_error(huge), Catch::StartsWith(huge + ":3: column 3 (high): high '1e300' is more than 10 times") &&
                                   Catch::Contains("low '1e-300'") && Catch::Contains("allow_implausible_bars"));
  // Close-to-close beyond a factor 10, either way.
  const std::string up = dir.write("up.csv", header + good + "2020-01-02,105,106,104,105.5,1\n");
  CHECK_THAT(load_error(up), Catch::StartsWith(up + ":3: column 5 (close): close '105.5'") &&
                                 Catch::Contains("previous row's close 10.5"));
  const std::string down = dir.write("down.csv", header + good + "2020-01-02,1.04,1.05,1.04,1.04,1\n");
  CHECK_THAT(load_error(down), Catch::Contains(":3: column 5 (close)"));
  // Exactly 10x is still plausible.
  const std::string edge = dir.write("edge.csv", header + "2020-01-01,10,100,10,50,1\n2020-01-02,500,500,500,500,1\n");
  CHECK(foxrl::load_market_csv(edge).size() == 2);
  foxrl::LoadOptions allow;
  allow.allow_implausible_bars = true;
  CHECK(foxrl::load_market_csv(huge, allow).size() == 2);
  CHECK(foxrl::load_market_csv(up, allow).size() == 2);
  // Skip mode counts them like any other bad row; returns are measured
  // from the last kept row.
  foxrl::LoadOptions skip;
  skip.skip_bad_rows = true;
  foxrl::LoadReport report;
  const std::string mixed =
      dir.write("mixed.csv", header + good + "2020-01-02,1,1e300,1e-300,1,100\n2020-01-03,105,106,104,105.5,1\n" +
                                 "2020-01-04,10,11,9,10.5,100\n");
  CHECK(foxrl::load_market_csv(mixed, skip, &report).size() == 2);
  CHECK(report.skipped["implausible_range"] == 1);
  CHECK(report.skipped["implausible_return"] == 1);
}

TEST_CASE("loader messages: BOM accepted, quotes short and escaped, NUL does not cut them", "[market_data]") {
  foxrl::test::TempDir dir;
  const std::string header = "timestamp,open,high,low,close,volume\n";
  const std::string bom = dir.write("bom.csv", "\xEF\xBB\xBF" + header + "2020-01-01,10,11,9,10.5,100\n");
  CHECK(foxrl::load_market_csv(bom).size() == 1);
  // A 1 MB line: the message quotes ~200 bytes of it and says how long it was.
  const std::string long_line = dir.write("long.csv", header + std::string(1 << 20, 'x') + "\n");
  const std::string msg = load_error(long_line);
  CHECK_THAT(msg, Catch::StartsWith(long_line + ":2: expected 6 fields") && Catch::Contains("...' (1048576 bytes)"));
  CHECK(msg.size() < long_line.size() + 400);
  // A NUL and a control byte in a field: escaped, and the text after them kept.
  const std::string nul = dir.write("nul.csv", header + std::string("2020-01-01,10,1\0\x01,9,10.5,100\n", 29));
  const std::string nul_msg = load_error(nul);
  CHECK_THAT(nul_msg, Catch::Contains(nul + ":2: column 3 (high): value '1\\x00\\x01' is not a number"));
  // Binary header bytes are escaped too.
  const std::string binary = dir.write("binary.csv", std::string("\xff\xfe\x00\x01,open\n", 10));
  CHECK_THAT(load_error(binary), Catch::Contains("header '\\xff\\xfe\\x00\\x01,open' lacks column(s)"));
}
