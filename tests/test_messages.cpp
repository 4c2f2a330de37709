// The helpers every message that echoes user input goes through: quoting
// (short, escaped), the strict JSON reader, and output directories.
#include "core/error.hpp"
#include "core/strings.hpp"
#include "io/output_dir.hpp"
#include "io/strict_json.hpp"
#include "support/env_test_util.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

namespace {

template <class F>
std::string usage_error_of(F&& f) {
  try {
    f();
  } catch (const foxrl::UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("quote_excerpt escapes non-printables and shortens long text", "[messages]") {
  using foxrl::quote_excerpt;
  CHECK(quote_excerpt("abc") == "'abc'");
  CHECK(quote_excerpt("") == "''");
  CHECK(quote_excerpt(std::string("a\0b", 3)) == "'a\\x00b'");
  CHECK(quote_excerpt("tab\there\nnew\rline") == "'tab\\there\\nnew\\rline'");
  CHECK(quote_excerpt("it's a \\ path") == "'it\\'s a \\\\ path'");
  CHECK(quote_excerpt("\x1b[31mred\x7f") == "'\\x1b[31mred\\x7f'");
  // Well-formed UTF-8 stays readable; stray bytes are escaped.
  CHECK(quote_excerpt("B\xc3\xb6rse \xe2\x82\xac") == "'B\xc3\xb6rse \xe2\x82\xac'");
  CHECK(quote_excerpt("\xff\xc3(\xe2\x82") == "'\\xff\\xc3(\\xe2\\x82'");
  // At most max bytes of the text, then "..." and the whole length.
  const std::string big(10 << 20, 'x');
  const std::string q = quote_excerpt(big);
  CHECK(q == "'" + std::string(200, 'x') + "...' (10485760 bytes)");
  CHECK(quote_excerpt("abcdef", 3) == "'abc...' (6 bytes)");
  CHECK(quote_excerpt("abc", 3) == "'abc'");
  // A multi-byte character is not cut in half at the limit.
  CHECK(quote_excerpt("ab\xc3\xb6", 3) == "'ab...' (4 bytes)");
}

TEST_CASE("parse_strict_json: depth limit, duplicate keys, line and column", "[messages][json]") {
  using foxrl::parse_strict_json;
  CHECK(parse_strict_json(R"({"a": [1, 2, {"b": null}], "c": "x"})", "t")["a"][2].contains("b"));
  CHECK(parse_strict_json("\xEF\xBB\xBF[1]", "t") == nlohmann::json::array({1}));
  CHECK(parse_strict_json("18446744073709551615", "t").get<std::uint64_t>() == 18446744073709551615ULL);
  // 64 levels pass, 65 do not; 100,000 fail cleanly.
  CHECK(parse_strict_json(std::string(64, '[') + std::string(64, ']'), "t").is_array());
  CHECK_THAT(usage_error_of([] { parse_strict_json(std::string(65, '[') + std::string(65, ']'), "t"); }),
             Catch::Equals("t:1:65: arrays and objects nest deeper than 64 levels"));
  CHECK_THAT(usage_error_of([] { parse_strict_json(std::string(100000, '['), "deep.json"); }),
             Catch::StartsWith("deep.json:1:65: "));
  CHECK_THAT(usage_error_of(
                 [] { parse_strict_json("{\"a\": [{\"k\": 1}, {\"k\": 2}],\n \"k\": {\"x\": 1, \"x\": 2}}", "d"); }),
             Catch::Equals("d:2:16: key 'x' appears twice in one object"));
  // Keys with escapes and strings with brackets do not confuse the locator.
  CHECK_THAT(usage_error_of([] { parse_strict_json("{\"[\\\"\": 1, \"y\": \"{[\", \"[\\\"\": 2}", "e"); }),
             Catch::StartsWith("e:1:23: key '[\"' appears twice"));
  CHECK_THAT(usage_error_of([] { parse_strict_json("{\n  \"a\": 1,\n  \"b\": tru\n}", "s"); }),
             Catch::StartsWith("s:3:11: syntax error while parsing value - invalid literal; last read: '") &&
                 Catch::EndsWith("tru<U+000A>'"));
  CHECK_THAT(usage_error_of([] { parse_strict_json("[1, 2", "end"); }),
             Catch::StartsWith("end:1:") && Catch::Contains("unexpected end of input"));
  CHECK_THAT(usage_error_of([] { parse_strict_json("\"" + std::string(5000, 'y') + "\x01\"", "long"); }),
             Catch::StartsWith("long:1:5002: syntax error") && Catch::Contains("...' (") &&
                 !Catch::Contains(std::string(300, 'y')));
  CHECK_THAT(usage_error_of([] { parse_strict_json("[1e999]", "big"); }),
             Catch::Contains("big:1:") && Catch::Contains("number overflow"));
  CHECK_THAT(usage_error_of([] { parse_strict_json("", "empty"); }),
             Catch::Equals("empty:1:1: syntax error: no JSON value (the input is empty or only whitespace)"));
  // Whitespace only (and a BOM before it): the location is where the input ends.
  CHECK_THAT(usage_error_of([] { parse_strict_json("\xEF\xBB\xBF \n\t ", "blank"); }),
             Catch::StartsWith("blank:2:3: syntax error: no JSON value"));
}

TEST_CASE("prepare_output_directory creates missing directories and refuses unusable ones", "[messages][output]") {
  foxrl::test::TempDir dir;
  const std::string nested = dir.file("a/b/c");
  foxrl::prepare_output_directory(nested, "out_dir");
  CHECK(std::filesystem::is_directory(nested));
  CHECK(std::filesystem::is_empty(nested));  // the write probe is gone
  const std::string file = dir.write("plain", "x");
  CHECK_THAT(usage_error_of([&] { foxrl::prepare_output_directory(file, "out_dir"); }),
             Catch::StartsWith("out_dir '" + file + "': "));
  CHECK_THAT(usage_error_of([&] { foxrl::prepare_output_directory(file + "/sub", "out_dir"); }),
             Catch::StartsWith("out_dir '" + file + "/sub': cannot create the directory"));
  CHECK_THAT(usage_error_of([&] { foxrl::prepare_output_file_directory(file + "/x.csv", "--out"); }),
             Catch::StartsWith("--out '" + file + "': "));
  foxrl::prepare_output_file_directory("x.csv", "--out");  // the working directory: nothing to do
  foxrl::prepare_output_file_directory(dir.file("new/x.csv"), "--out");
  CHECK(std::filesystem::is_directory(dir.file("new")));
}
