# perf/regress.py's comparison on hand-made result files: a run within the
# noise passes, a clearly slower metric or a missing one fails, a noisy
# baseline widens the threshold, and bad inputs (malformed or missing
# baseline, missing build directory or executable) exit 2 with a message
# naming the file and field. Run as
#   cmake -DPYTHON=python3 -DREGRESS=perf/regress.py -DOUT=dir -P check_regress.cmake
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})

function(results path values spreads)
  # values/spreads: three medians and spreads for the three metrics below.
  list(GET values 0 a)
  list(GET values 1 b)
  list(GET values 2 c)
  list(GET spreads 0 sa)
  list(GET spreads 1 sb)
  list(GET spreads 2 sc)
  file(WRITE ${path} "{
 \"format\": \"foxrl-perf-results\", \"version\": 1, \"machine\": \"test-machine\", \"size\": \"quick\",
 \"backend\": \"Serial\", \"repeats\": 3, \"commit\": \"test\",
 \"metrics\": {
  \"pipeline | market-throughput | median_us\": {\"median\": ${a}, \"spread\": ${sa}, \"runs\": [${a}]},
  \"replay_sample | capacity=4096 | median_us\": {\"median\": ${b}, \"spread\": ${sb}, \"runs\": [${b}]},
  \"envs | cartpole | median_us\": {\"median\": ${c}, \"spread\": ${sc}, \"runs\": [${c}]}
 }
}
")
endfunction()

# Runs regress.py with ARGN; checks the exit code and that every EXPECT
# string is in stdout + stderr.
function(expect code)
  cmake_parse_arguments(E "" "" "ARGS;EXPECT;REJECT" ${ARGN})
  execute_process(COMMAND ${PYTHON} ${REGRESS} ${E_ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL code)
    message(FATAL_ERROR "regress.py ${E_ARGS}: exit ${rc}, expected ${code}\n${out}${err}")
  endif()
  foreach(s IN LISTS E_EXPECT)
    string(FIND "${out}${err}" "${s}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "regress.py ${E_ARGS}: output lacks \"${s}\":\n${out}${err}")
    endif()
  endforeach()
  foreach(s IN LISTS E_REJECT)
    string(FIND "${out}${err}" "${s}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "regress.py ${E_ARGS}: output has \"${s}\":\n${out}${err}")
    endif()
  endforeach()
endfunction()

set(base ${OUT}/baseline.json)
results(${base} "400.0;300.0;100.0" "0.01;0.02;0.01")

# Within the noise: 3-6% slower, 10% tolerance.
results(${OUT}/within.json "412.0;318.0;103.0" "0.02;0.01;0.015")
expect(0 ARGS --baseline ${base} --current ${OUT}/within.json EXPECT "regress: ok" "1.030" REJECT "REGRESSION")

# One metric 40% slower: fails, naming it and its ratio.
results(${OUT}/slower.json "404.0;420.0;101.0" "0.01;0.01;0.01")
expect(1 ARGS --baseline ${base} --current ${OUT}/slower.json
       EXPECT "REGRESSION" "regress: FAILED: 1 metric(s): replay_sample | capacity=4096 | median_us (x1.400)")

# The same 40% with 15% and 20% spreads: threshold 3 x 25% = 75%, passes.
results(${OUT}/noisy_base.json "400.0;300.0;100.0" "0.01;0.15;0.01")
results(${OUT}/noisy.json "404.0;420.0;101.0" "0.01;0.20;0.01")
expect(0 ARGS --baseline ${OUT}/noisy_base.json --current ${OUT}/noisy.json EXPECT "+75.0%" "regress: ok")
# ... and a tighter --noise-k makes it fail.
expect(1 ARGS --baseline ${OUT}/noisy_base.json --current ${OUT}/noisy.json --noise-k 1 EXPECT "REGRESSION")

# A baseline metric the run lacks fails.
file(WRITE ${OUT}/partial.jsonl
  "{\"bench\":\"pipeline\",\"config\":\"market-throughput\",\"backend\":\"Serial\",\"median_us\":401.0}\n"
  "{\"bench\":\"envs\",\"config\":\"cartpole\",\"backend\":\"Serial\",\"median_us\":100.0}\n")
expect(1 ARGS --baseline ${base} --current ${OUT}/partial.jsonl
       EXPECT "MISSING" "replay_sample | capacity=4096 | median_us (missing)")

# Raw benchmark lines: repeated lines are runs (290, 310, 300: median 300,
# spread 1.4826 x 10 / 300).
file(WRITE ${OUT}/raw.jsonl
  "{\"bench\":\"pipeline\",\"config\":\"market-throughput\",\"backend\":\"Serial\",\"median_us\":400.0}\n"
  "{\"bench\":\"replay_sample\",\"config\":\"capacity=4096\",\"backend\":\"Serial\",\"median_us\":290.0}\n"
  "{\"bench\":\"replay_sample\",\"config\":\"capacity=4096\",\"backend\":\"Serial\",\"median_us\":310.0}\n"
  "{\"bench\":\"replay_sample\",\"config\":\"capacity=4096\",\"backend\":\"Serial\",\"median_us\":300.0}\n"
  "{\"bench\":\"envs\",\"config\":\"cartpole\",\"backend\":\"Serial\",\"median_us\":100.0}\n")
expect(0 ARGS --baseline ${base} --current ${OUT}/raw.jsonl EXPECT "300.00    4.9%" "regress: ok")

# --update-baseline writes a baseline the next comparison reads.
expect(0 ARGS --baseline ${OUT}/written.json --current ${OUT}/slower.json --update-baseline
       EXPECT "wrote baseline ${OUT}/written.json")
expect(0 ARGS --baseline ${OUT}/written.json --current ${OUT}/slower.json EXPECT "regress: ok")

# Malformed baselines: the error names the file and the field.
file(READ ${base} text)
string(REPLACE "\"median\": 300.0" "\"median\": \"fast\"" text "${text}")
file(WRITE ${OUT}/bad_median.json "${text}")
expect(2 ARGS --baseline ${OUT}/bad_median.json --current ${OUT}/within.json
       EXPECT "${OUT}/bad_median.json: metrics.\"replay_sample | capacity=4096 | median_us\".median"
              "must be a positive number" "\"fast\"")
file(WRITE ${OUT}/bad_format.json "{\n \"format\": \"something-else\", \"version\": 1\n}\n")
expect(2 ARGS --baseline ${OUT}/bad_format.json --current ${OUT}/within.json
       EXPECT "${OUT}/bad_format.json: format: must be \"foxrl-perf-results\"")
file(WRITE ${OUT}/truncated.json "{\n \"format\": \"foxrl-perf-results\",\n \"metrics\": {\n")
expect(2 ARGS --baseline ${OUT}/truncated.json --current ${OUT}/within.json EXPECT "${OUT}/truncated.json:4:" "not JSON")

# Missing baseline, build directory and executable.
expect(2 ARGS --baseline ${OUT}/none.json --current ${OUT}/within.json
       EXPECT "${OUT}/none.json: no baseline for machine" "--update-baseline")
expect(2 ARGS --baseline ${base} --build-dir ${OUT}/no-build EXPECT "build directory ${OUT}/no-build not found")
file(MAKE_DIRECTORY ${OUT}/empty-build/perf)
expect(2 ARGS --baseline ${base} --build-dir ${OUT}/empty-build
       EXPECT "${OUT}/empty-build/perf/foxrl_bench_update: benchmark executable not found")
expect(2 ARGS --smoke --build-dir ${OUT}/no-build EXPECT "build directory ${OUT}/no-build not found")

message("regress.py comparison: ok")
