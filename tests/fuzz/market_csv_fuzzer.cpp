// Fuzzes the OHLCV CSV loader (load_market_csv): the input is the CSV file,
// loaded once stopping at the first bad row and once skipping bad rows.
#include "fuzz_support.hpp"
#include "market/market_data.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = foxrl::fuzz::scratch_dir() + "/bars.csv";
  foxrl::fuzz::write_file(path, data, size);
  for (const bool skip : {false, true}) {
    foxrl::fuzz::expect_clean_rejection([&] {
      foxrl::LoadOptions options;
      options.skip_bad_rows = skip;
      foxrl::LoadReport report;
      const foxrl::MarketSeries s = foxrl::load_market_csv(path, options, &report);
      // What the loader promises of a series it returns.
      if (s.size() == 0 || s.timestamp.size() != s.size() || s.open.size() != s.size() || s.high.size() != s.size() ||
          s.low.size() != s.size() || s.volume.size() != s.size() || report.rows_loaded != s.size())
        std::abort();
      for (std::size_t i = 1; i < s.size(); ++i)
        if (s.timestamp[i] <= s.timestamp[i - 1]) std::abort();
    });
  }
  return 0;
}
