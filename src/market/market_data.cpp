#include "market/market_data.hpp"

#include "core/error.hpp"
#include "core/strings.hpp"
#include "kernels/core/counter_rng.hpp"
#include "market/bounded_lines.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace foxrl {

std::size_t LoadReport::rows_skipped() const {
  std::size_t n = 0;
  for (const auto& [reason, count] : skipped) n += count;
  return n;
}

namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Fields of one CSV line (RFC 4180 quoting within the line): a field that
// starts with '"' runs to the closing quote, "" inside it is one '"', and
// commas inside it are data. Unquoted fields and the text of quoted ones are
// trimmed. Returns false, with the 1-based column in `bad_column`, when a
// quoted field is not closed or text follows its closing quote.
bool split_fields(const std::string& line, std::vector<std::string>& fields, std::size_t& bad_column) {
  fields.clear();
  std::size_t pos = 0;
  for (;;) {
    while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
    std::string field;
    if (pos < line.size() && line[pos] == '"') {
      bool closed = false;
      for (++pos; pos < line.size(); ++pos) {
        if (line[pos] != '"') {
          field += line[pos];
        } else if (pos + 1 < line.size() && line[pos + 1] == '"') {
          field += '"';
          ++pos;
        } else {
          closed = true;
          ++pos;
          break;
        }
      }
      while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
      if (!closed || (pos < line.size() && line[pos] != ',')) {
        bad_column = fields.size() + 1;
        return false;
      }
      fields.push_back(trim(field));
    } else {
      const std::size_t comma = line.find(',', pos);
      fields.push_back(trim(line.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos)));
      pos = comma == std::string::npos ? line.size() : comma;
    }
    if (pos >= line.size()) break;
    ++pos;  // the comma
  }
  return true;
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
// days_from_civil algorithm).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

bool is_leap(std::int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

bool digits(const std::string& s, std::size_t pos, std::size_t n, int& value) {
  if (pos + n > s.size()) return false;
  value = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
    value = value * 10 + (s[i] - '0');
  }
  return true;
}

bool all_digits(const std::string& s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
}

// Returns false (and leaves `out` alone) when `text` is not a timestamp.
// Unix times: up to 12 digits are seconds, 13 digits milliseconds (the
// exchanges' and crypto APIs' form; 13 digits of seconds would lie beyond
// the year 33000). ISO-8601: fractional seconds are cut to the second
// (series hold whole seconds), and an offset +HH:MM / -HH:MM (or +HHMM)
// gives local time, converted to UTC.
bool try_parse_timestamp(const std::string& text, std::int64_t& out) {
  if (text.empty()) return false;
  if (all_digits(text)) {
    if (text.size() > 13) return false;
    const std::int64_t value = std::stoll(text);
    out = text.size() == 13 ? value / 1000 : value;
    return true;
  }
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!digits(text, 0, 4, year) || text.size() < 10 || text[4] != '-' || !digits(text, 5, 2, month) || text[7] != '-' ||
      !digits(text, 8, 2, day)) {
    return false;
  }
  std::size_t pos = 10;
  bool have_time = false;
  if (pos < text.size() && (text[pos] == 'T' || text[pos] == ' ')) {
    if (!digits(text, pos + 1, 2, hour) || pos + 3 >= text.size() || text[pos + 3] != ':' ||
        !digits(text, pos + 4, 2, minute)) {
      return false;
    }
    have_time = true;
    pos += 6;
    if (pos < text.size() && text[pos] == ':') {
      if (!digits(text, pos + 1, 2, second)) return false;
      pos += 3;
      if (pos < text.size() && (text[pos] == '.' || text[pos] == ',')) {
        std::size_t end = pos + 1;
        while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
        if (end == pos + 1 || end - pos - 1 > 9) return false;  // at most nanoseconds
        pos = end;
      }
    }
  }
  std::int64_t offset_seconds = 0;
  if (pos < text.size() && text[pos] == 'Z') {
    ++pos;
  } else if (have_time && pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int off_hour = 0, off_minute = 0;
    const int sign = text[pos] == '+' ? 1 : -1;
    if (!digits(text, pos + 1, 2, off_hour)) return false;
    pos += 3;
    if (pos < text.size() && text[pos] == ':') ++pos;
    if (!digits(text, pos, 2, off_minute)) return false;
    pos += 2;
    if (off_hour > 23 || off_minute > 59) return false;
    offset_seconds = sign * (off_hour * 3600 + off_minute * 60);
  }
  if (pos != text.size()) return false;
  static const int month_days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (month < 1 || month > 12) return false;
  const int max_day = month_days[month - 1] + (month == 2 && is_leap(year) ? 1 : 0);
  if (day < 1 || day > max_day || hour > 23 || minute > 59 || second > 59) return false;
  out = days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day)) * 86400 + hour * 3600 +
        minute * 60 + second - offset_seconds;
  return true;
}

enum class NumberStatus { ok, non_numeric, non_finite };

NumberStatus parse_number(const std::string& text, double& out) {
  if (text.empty()) return NumberStatus::non_numeric;
  // strtod also reads hex floats and "nan(...)"; accept only decimal forms.
  for (char c : text) {
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E')) {
      const std::string l = lower(text);
      const std::string body = (l[0] == '-' || l[0] == '+') ? l.substr(1) : l;
      if (body == "nan" || body == "inf" || body == "infinity") return NumberStatus::non_finite;
      return NumberStatus::non_numeric;
    }
  }
  errno = 0;
  char* end = nullptr;
  out = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return NumberStatus::non_numeric;
  if (!std::isfinite(out)) return NumberStatus::non_finite;  // overflow, e.g. 1e999
  return NumberStatus::ok;
}

struct Columns {
  int timestamp = -1, open = -1, high = -1, low = -1, close = -1, volume = -1;
};

/// User data in a message: at most ~200 characters, non-printables escaped.
std::string quote(const std::string& s) { return quote_excerpt(s); }

/// The ISO-8601 forms the loader reads, as messages name them.
const char* const kTimestampForms = "YYYY-MM-DD[( |T)HH:MM[:SS[.fff]]][Z|+HH:MM|-HH:MM]";

/// A number as the plausibility messages print it (9 significant digits).
std::string format_ratio(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

// A validation failure of one row.
struct RowError {
  std::string reason;
  std::string message;
};

}  // namespace

std::int64_t parse_timestamp(const std::string& text) {
  std::int64_t value = 0;
  if (!try_parse_timestamp(trim(text), value)) {
    throw UsageError("timestamp " + quote(text) + " is neither ISO-8601 (" + kTimestampForms +
                     ") nor unix seconds or milliseconds");
  }
  return value;
}

std::string format_timestamp(std::int64_t t) {
  std::int64_t days = t >= 0 ? t / 86400 : -((-t + 86399) / 86400);
  std::int64_t secs = t - days * 86400;
  // civil_from_days (inverse of days_from_civil).
  days += 719468;
  const std::int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(days - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  const std::int64_t y = static_cast<std::int64_t>(yoe) + era * 400 + (m <= 2);
  char buf[40];
  std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02d:%02d:%02dZ", static_cast<long long>(y), m, d,
                static_cast<int>(secs / 3600), static_cast<int>(secs / 60 % 60), static_cast<int>(secs % 60));
  return buf;
}

MarketSeries load_market_csv(const std::string& path, const LoadOptions& options, LoadReport* report) {
  // Line by line with a cap on each line: a device or binary file named by
  // mistake is refused after at most the cap, never read whole.
  BoundedLineReader lines(path, "market data file");
  const std::string name = path_for_message(path);

  LoadReport local_report;
  LoadReport& rep = report ? *report : local_report;
  rep = LoadReport{};

  MarketSeries series;
  series.source = path;

  bool have_header = false;
  Columns col;
  std::vector<std::string> names;
  std::int64_t last_time = 0;

  std::string line;
  while (lines.next(line)) {
    const std::size_t line_no = lines.line_number();
    if (trim(line).empty()) continue;
    const std::string where = name + ":" + std::to_string(line_no);

    std::vector<std::string> f;
    std::size_t bad_column = 0;
    const bool split_ok = split_fields(line, f, bad_column);
    const std::string quote_problem = "column " + std::to_string(bad_column) +
                                      ": a quoted field is not closed, or text follows its closing quote, in " +
                                      quote(line);

    if (!have_header) {
      if (!split_ok) throw UsageError(where + ": header " + quote_problem);
      names = f;
      for (int i = 0; i < static_cast<int>(names.size()); ++i) {
        const std::string n = lower(names[static_cast<std::size_t>(i)]);
        int* slot = nullptr;
        if (n == "timestamp" || n == "date" || n == "datetime" || n == "time")
          slot = &col.timestamp;
        else if (n == "open")
          slot = &col.open;
        else if (n == "high")
          slot = &col.high;
        else if (n == "low")
          slot = &col.low;
        else if (n == "close")
          slot = &col.close;
        else if (n == "volume")
          slot = &col.volume;
        if (!slot) continue;  // extra columns are ignored
        if (*slot >= 0) {
          throw UsageError(where + ": header names column " + quote(names[static_cast<std::size_t>(i)]) +
                           " twice (columns " + std::to_string(*slot + 1) + " and " + std::to_string(i + 1) + ")");
        }
        *slot = i;
      }
      std::string missing;
      const std::pair<const char*, int> required[] = {{"timestamp", col.timestamp}, {"open", col.open},
                                                      {"high", col.high},           {"low", col.low},
                                                      {"close", col.close},         {"volume", col.volume}};
      for (const auto& [name, idx] : required) {
        if (idx < 0) missing += (missing.empty() ? "" : ", ") + std::string(name);
      }
      if (!missing.empty()) {
        throw UsageError(where + ": header " + quote(line) + " lacks column(s) " + missing +
                         " (need timestamp,open,high,low,close,volume; names are case-insensitive)");
      }
      have_header = true;
      continue;
    }

    ++rep.data_lines;
    RowError err;
    auto fail = [&](const std::string& reason, const std::string& message) {
      err = RowError{reason, where + ": " + message};
    };
    auto field_desc = [&](int c) {
      return "column " + std::to_string(c + 1) + " (" + names[static_cast<std::size_t>(c)] + ")";
    };

    std::int64_t t = 0;
    double v[5] = {0, 0, 0, 0, 0};  // open, high, low, close, volume
    const int idx[5] = {col.open, col.high, col.low, col.close, col.volume};
    if (!split_ok) {
      fail("bad_quote", quote_problem);
    } else if (f.size() != names.size()) {
      fail("field_count", "expected " + std::to_string(names.size()) + " fields as in the header, found " +
                              std::to_string(f.size()) + " in " + quote(line) +
                              (lines.at_unterminated_end() ? " (truncated last line?)" : ""));
    } else if (!try_parse_timestamp(f[static_cast<std::size_t>(col.timestamp)], t)) {
      fail("bad_timestamp", field_desc(col.timestamp) + ": value " + quote(f[static_cast<std::size_t>(col.timestamp)]) +
                                " is not a timestamp (ISO-8601 " + kTimestampForms +
                                " or unix seconds or milliseconds)");
    } else {
      for (int k = 0; k < 5 && err.reason.empty(); ++k) {
        const std::string& s = f[static_cast<std::size_t>(idx[k])];
        switch (parse_number(s, v[k])) {
          case NumberStatus::non_numeric:
            fail("non_numeric", field_desc(idx[k]) + ": value " + quote(s) + " is not a number");
            break;
          case NumberStatus::non_finite:
            fail("non_finite", field_desc(idx[k]) + ": value " + quote(s) + " is not finite");
            break;
          case NumberStatus::ok:
            break;
        }
      }
    }
    if (err.reason.empty()) {
      for (int k = 0; k < 4 && err.reason.empty(); ++k) {
        if (!(v[k] > 0)) {
          fail("non_positive_price",
               field_desc(idx[k]) + ": price " + quote(f[static_cast<std::size_t>(idx[k])]) + " is not positive");
        }
      }
    }
    if (err.reason.empty() && v[4] < 0) {
      fail("negative_volume",
           field_desc(col.volume) + ": volume " + quote(f[static_cast<std::size_t>(col.volume)]) + " is negative");
    }
    const auto fs = [&](int c) { return quote(f[static_cast<std::size_t>(c)]); };
    if (err.reason.empty() && v[1] < v[2]) {
      fail("high_below_low", field_desc(col.high) + ": high " + fs(col.high) + " is below " + field_desc(col.low) +
                                 " low " + fs(col.low));
    }
    if (err.reason.empty() && v[1] < std::max(v[0], v[3])) {
      fail("high_below_open_close", field_desc(col.high) + ": high " + fs(col.high) + " is below max(open " +
                                        fs(col.open) + ", close " + fs(col.close) + ")");
    }
    if (err.reason.empty() && v[2] > std::min(v[0], v[3])) {
      fail("low_above_open_close", field_desc(col.low) + ": low " + fs(col.low) + " is above min(open " + fs(col.open) +
                                       ", close " + fs(col.close) + ")");
    }
    // Plausibility: valid numbers that no market quotes within one bar,
    // almost always a unit or parsing error upstream; they would dominate
    // every statistic of the run.
    const std::string implausible =
        "; no market moves that far in one bar (config key allow_implausible_bars: true, or option "
        "--allow-implausible-bars, accepts such bars)";
    if (err.reason.empty() && !options.allow_implausible_bars && v[1] / v[2] > kMaxBarMove) {
      fail("implausible_range", field_desc(col.high) + ": high " + fs(col.high) + " is more than " +
                                    format_ratio(kMaxBarMove) + " times " + field_desc(col.low) + " low " +
                                    fs(col.low) + implausible);
    }
    if (err.reason.empty() && !options.allow_implausible_bars && !series.close.empty() &&
        (v[3] / series.close.back() > kMaxBarMove || series.close.back() / v[3] > kMaxBarMove)) {
      fail("implausible_return", field_desc(col.close) + ": close " + fs(col.close) +
                                     " differs from the previous row's close " + format_ratio(series.close.back()) +
                                     " by a factor of more than " + format_ratio(kMaxBarMove) + implausible);
    }
    if (err.reason.empty() && !series.timestamp.empty() && t <= last_time) {
      // Offsets and fractions hide the UTC time the rows are compared in.
      const std::string utc = format_timestamp(t);
      const std::string shown = f[static_cast<std::size_t>(col.timestamp)] == utc ? "" : " (" + utc + ")";
      fail("non_increasing_timestamp", field_desc(col.timestamp) + ": timestamp " + fs(col.timestamp) + shown +
                                           (t == last_time ? " duplicates" : " is earlier than") +
                                           " the previous row's (" + format_timestamp(last_time) +
                                           "); rows must be strictly increasing in time");
    }

    if (!err.reason.empty()) {
      if (!options.skip_bad_rows) throw UsageError(err.message);
      ++rep.skipped[err.reason];
      if (rep.first_messages.size() < 10) rep.first_messages.push_back(err.message);
      continue;
    }
    series.timestamp.push_back(t);
    series.open.push_back(v[0]);
    series.high.push_back(v[1]);
    series.low.push_back(v[2]);
    series.close.push_back(v[3]);
    series.volume.push_back(v[4]);
    last_time = t;
  }
  if (!have_header) throw UsageError(name + ": empty file (expected a header timestamp,open,high,low,close,volume)");
  if (series.size() == 0) {
    throw UsageError(name + ": no " + (rep.data_lines ? "valid " : "") + "data rows after the header" +
                     (rep.data_lines ? " (" + std::to_string(rep.rows_skipped()) + " skipped)" : ""));
  }
  rep.rows_loaded = series.size();
  return series;
}

namespace {

// Host-side standard normal of draw k (std:: math, so every build of the
// library produces the same series).
double host_normal(std::uint64_t seed, std::uint64_t k) {
  const double u1 = 1.0 - kernels::counter_uniform_double(seed, 0, 2 * k);
  const double u2 = kernels::counter_uniform_double(seed, 0, 2 * k + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace

MarketSeries generate_regime_market(const RegimeMarketConfig& c, std::uint64_t seed) {
  if (c.bars < 2) throw UsageError("synthetic market: need at least 2 bars, got " + std::to_string(c.bars));
  const std::uint64_t s = kernels::derive_seed(seed, kernels::rng_tag::market_series);
  MarketSeries m;
  m.source = "synthetic:regime";
  m.timestamp.resize(c.bars);
  m.open.resize(c.bars);
  m.high.resize(c.bars);
  m.low.resize(c.bars);
  m.close.resize(c.bars);
  m.volume.resize(c.bars);
  int state = 0;
  double var = c.omega[0] / (1.0 - c.alpha[0] - c.beta[0]);  // stationary variance of the calm state
  double r_prev = 0.0;
  double price = c.start_price;
  for (std::size_t i = 0; i < c.bars; ++i) {
    const std::uint64_t k = 4 * static_cast<std::uint64_t>(i);
    const double u_switch = kernels::counter_uniform_double(s, 1, i);
    if (state == 0 ? u_switch < c.p_calm_to_turbulent : u_switch < c.p_turbulent_to_calm) state = 1 - state;
    var = c.omega[state] + c.alpha[state] * r_prev * r_prev + c.beta[state] * var;
    const double sigma = std::sqrt(var);
    const double r = c.mu[state] + sigma * host_normal(s, k);
    const double open = price;
    const double close = open * std::exp(r);
    const double up = std::fabs(host_normal(s, k + 1)) * 0.5 * sigma;
    const double down = std::fabs(host_normal(s, k + 2)) * 0.5 * sigma;
    m.timestamp[i] = c.start_time + static_cast<std::int64_t>(i) * c.bar_seconds;
    m.open[i] = open;
    m.close[i] = close;
    m.high[i] = std::max(open, close) * std::exp(up);
    m.low[i] = std::min(open, close) * std::exp(-down);
    m.volume[i] = std::round(c.base_volume * (1.0 + 50.0 * std::fabs(r)) * std::exp(0.3 * host_normal(s, k + 3)));
    r_prev = r - c.mu[state];
    price = close;
  }
  return m;
}

MarketSeries generate_benchmark_market(std::size_t bars, std::uint64_t seed) {
  if (bars < 2) throw UsageError("benchmark market: need at least 2 bars, got " + std::to_string(bars));
  const std::uint64_t s = kernels::derive_seed(seed, kernels::rng_tag::market_series);
  MarketSeries m;
  m.source = "synthetic:benchmark";
  m.timestamp.resize(bars);
  m.open.resize(bars);
  m.high.resize(bars);
  m.low.resize(bars);
  m.close.resize(bars);
  m.volume.assign(bars, 1.0);
  // Prices are kept as log price so a million bars cannot overflow; the
  // stored prices are exp of it, and their log ratios recover r to ~1e-15.
  double log_price = std::log(100.0);
  for (std::size_t i = 0; i < bars; ++i) {
    const double r = 0.01 * host_normal(s, i) + 0.002 * std::sin(6.283185307179586 * static_cast<double>(i) / 10000.0);
    const double open = std::exp(log_price);
    log_price += r;
    const double close = std::exp(log_price);
    m.timestamp[i] = 1483228800 + static_cast<std::int64_t>(i) * 60;
    m.open[i] = open;
    m.close[i] = close;
    m.high[i] = std::max(open, close);
    m.low[i] = std::min(open, close);
  }
  return m;
}

std::vector<std::string> synthetic_market_names() { return {"regime", "benchmark"}; }

MarketSeries make_synthetic_market(const std::string& name, std::size_t bars, std::uint64_t seed) {
  if (name == "regime") {
    RegimeMarketConfig c;
    c.bars = bars;
    return generate_regime_market(c, seed);
  }
  if (name == "benchmark") return generate_benchmark_market(bars, seed);
  throw UsageError("unknown synthetic market " + quote(name) + " (known: regime, benchmark)");
}

std::vector<double> host_log_returns(const MarketSeries& m) {
  std::vector<double> r(m.size());
  for (std::size_t t = 0; t < m.size(); ++t) {
    r[t] = std::log(m.close[t] / (t == 0 ? m.open[0] : m.close[t - 1]));
  }
  return r;
}

}  // namespace foxrl
