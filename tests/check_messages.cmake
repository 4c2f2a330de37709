# Bad input of every kind: exit 2 and a message that names the file, line,
# column, option or key, quotes at most ~200 characters of the input
# (escaped), and carries the one "foxrl: " prefix. -DCLI, -DDATA (tests/data),
# -DWORK (a scratch directory).
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(ACTIONS ${DATA}/cartpole_actions.txt)
string(ASCII 239 187 191 bom)  # UTF-8 byte-order mark
string(ASCII 1 127 control)    # two non-printable bytes

# expect_error(<exit code> <regex the message must match> <arguments...>)
function(expect_error code pattern)
  execute_process(COMMAND ${CLI} ${ARGN} RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  string(LENGTH "${err}" length)
  if(NOT rc EQUAL code)
    message(FATAL_ERROR "foxrl ${ARGN}: exit ${rc}, expected ${code}: ${err}")
  endif()
  if(NOT err MATCHES "${pattern}")
    message(FATAL_ERROR "foxrl ${ARGN}: message does not match '${pattern}': ${err}")
  endif()
  if(err MATCHES "foxrl: foxrl:" OR length GREATER 1500)
    message(FATAL_ERROR "foxrl ${ARGN}: doubled prefix or ${length} bytes of message: ${err}")
  endif()
endfunction()

# --- JSON configs and --set values -------------------------------------------
string(REPEAT "[" 100000 deep)
file(WRITE ${WORK}/deep.json "{\"hidden\": ${deep}")
expect_error(2 "^foxrl: [^\n]*/deep.json:1:75: arrays and objects nest deeper than 64 levels\n$"
             train --config ${WORK}/deep.json)
expect_error(2 "^foxrl: --set hidden:1:65: arrays and objects nest deeper than 64" train --set hidden=${deep})
file(WRITE ${WORK}/dup.json "{\"env\": \"cartpole\",\n  \"gamma\": 0.9,\n  \"gamma\": 0.5}\n")
expect_error(2 "/dup.json:3:3: key 'gamma' appears twice" train --config ${WORK}/dup.json)
file(WRITE ${WORK}/syntax.json "{\n  \"env\": \"cartpole\"\n  \"gamma\": 0.9\n}\n")
expect_error(2 "/syntax.json:3:9: syntax error while parsing object - unexpected string literal"
             train --config ${WORK}/syntax.json)
expect_error(2 "--set lr:1:1: syntax error" train --set lr=abc)
expect_error(2 "key 'seed': value 18000000000000000500 is out of range \\[0, 18000000000000000000\\]"
             train --set seed=18000000000000000500)
expect_error(2 "--set max_grad_norm:1:[0-9]+: number overflow" train --set max_grad_norm=1e999)
expect_error(2 "--set: key 'batch_size': value 65537 is out of range \\[1, 65536\\]" train --set batch_size=65537)
expect_error(2 "--set: key 'target_update_every': value 4294967796 is out of range"
             train --set target_update_every=4294967796)
# A UTF-8 BOM before a config is accepted.
file(WRITE ${WORK}/bom.json "${bom}{\"env\": \"cartpole\", \"num_envs\": 2}\n")
expect_error(0 "" collect --config ${WORK}/bom.json --steps 10 --out ${WORK}/bom.safetensors)

# --- floating-point and integer options ---------------------------------------
foreach(value nan inf -inf 2)
  expect_error(2 "--cost: value '${value}' is not a finite number in \\[0, 1\\]"
               rollout --env market --cost ${value} --actions ${ACTIONS} --out ${WORK}/x.csv)
  expect_error(2 "--epsilon: value '${value}' is not a finite number in \\[0, 1\\]"
               collect --set env=cartpole --steps 10 --epsilon ${value} --out ${WORK}/x.safetensors)
endforeach()
expect_error(2 "--window" rollout --env market --window 0 --actions ${ACTIONS} --out ${WORK}/x.csv)
expect_error(2 "--episode-length" rollout --env market --episode-length 0 --actions ${ACTIONS} --out ${WORK}/x.csv)
expect_error(2 "--bars" rollout --env market --bars 1 --actions ${ACTIONS} --out ${WORK}/x.csv)
# Long-only: 2 actions (flat, long), so action 2 (long in long_short) is out of range.
file(WRITE ${WORK}/short_long.txt "0\n2\n1\n")
expect_error(2 "short_long.txt:2: action .2. is not an integer in \\[0, 2\\)"
             rollout --env market --positions long_only --actions ${WORK}/short_long.txt --out ${WORK}/x.csv)
expect_error(2 "--positions"
             rollout --env market --positions long --actions ${ACTIONS} --out ${WORK}/x.csv)
expect_error(2 "synthetic:regime: the split of bars \\[0, 100\\) is too short for episodes of 1000 bars \\(episode_length\\) after a lookback of 64 bars \\(window 64\\)"
             rollout --env market --bars 100 --actions ${ACTIONS} --out ${WORK}/x.csv)
expect_error(2 "--initial-state '1,2,x\\\\n': expected comma-separated finite numbers"
             rollout --env cartpole --initial-state "1,2,x\n" --actions ${ACTIONS} --out ${WORK}/x.csv)

# --- market CSV files ---------------------------------------------------------
set(header "timestamp,open,high,low,close,volume\n")
set(rows "")
foreach(day RANGE 1 28)
  if(day LESS 10)
    set(day "0${day}")
  endif()
  string(APPEND rows "2020-02-${day},10,11,9,10.5,100\n")
endforeach()
set(market_args --env market --window 2 --episode-length 3 --actions ${ACTIONS} --out ${WORK}/m.csv)
file(WRITE ${WORK}/huge.csv "${header}2020-01-30,10,11,9,10.5,100\n2020-01-31,1,1e300,1e-300,1,1\n${rows}")
expect_error(2 "huge.csv:3: column 3 \\(high\\): high '1e300' is more than 10 times column 4 \\(low\\) low '1e-300'.*allow_implausible_bars"
             rollout ${market_args} --data ${WORK}/huge.csv)
file(WRITE ${WORK}/jump.csv "${header}2020-01-30,10,11,9,10.5,100\n2020-01-31,200,210,190,200,1\n${rows}")
expect_error(2 "jump.csv:3: column 5 \\(close\\): close '200' differs from the previous row's close 10.5"
             rollout ${market_args} --data ${WORK}/jump.csv)
expect_error(0 "" rollout ${market_args} --data ${WORK}/jump.csv --allow-implausible-bars)
file(WRITE ${WORK}/bom.csv "${bom}${header}${rows}")
expect_error(0 "" rollout ${market_args} --data ${WORK}/bom.csv)
string(REPEAT "x" 100000 long)
file(WRITE ${WORK}/long.csv "${header}${long}\n")
expect_error(2 "long.csv:2: expected 6 fields as in the header, found 1 in 'x+\\.\\.\\.' \\(100000 bytes\\)"
             rollout ${market_args} --data ${WORK}/long.csv)
file(WRITE ${WORK}/control.csv "${header}2020-01-01,10,1${control},9,10.5,100\n")
expect_error(2 "control.csv:2: column 3 \\(high\\): value '1\\\\x01\\\\x7f' is not a number\n$"
             rollout ${market_args} --data ${WORK}/control.csv)
expect_error(2 "keys 'train_end' \\('1990-01-01'\\).*leave the train split 0 bars: .*bars_200.csv spans"
             train --set data=${DATA}/bars_200.csv --set train_end=1990-01-01 --set test_start=1990-02-01
             --set out_dir=${WORK}/split-run)

# --- action files -------------------------------------------------------------
file(WRITE ${WORK}/actions.txt "0\n1\n2x\n")
expect_error(2 "actions.txt:3: action '2x' is not an integer in \\[0, 2\\)"
             rollout --env cartpole --actions ${WORK}/actions.txt --out ${WORK}/x.csv)
expect_error(2 "cannot open the action file" rollout --env cartpole --actions ${WORK}/none.txt --out ${WORK}/x.csv)

# --- output directories: created when missing, refused when unusable -----------
file(WRITE ${WORK}/plain "not a directory")
set(tiny train --set env=cartpole --set num_envs=2 --set hidden=8 --set batch_size=8 --set buffer_capacity=64
    --set learning_starts=16 --set iterations_per_epoch=10 --set epochs=1)
expect_error(2 "^foxrl: out_dir '[^']*/plain': " ${tiny} --set out_dir=${WORK}/plain)
expect_error(2 "^foxrl: out_dir '[^']*/plain/run': cannot create the directory" ${tiny} --set out_dir=${WORK}/plain/run)
expect_error(2 "^foxrl: --out '[^']*/plain': " rollout --env cartpole --actions ${ACTIONS} --out ${WORK}/plain/x.csv)
expect_error(2 "^foxrl: --out '[^']*/plain': " collect --set env=cartpole --set num_envs=2 --steps 10
             --out ${WORK}/plain/x.safetensors)
expect_error(0 "" rollout --env cartpole --actions ${ACTIONS} --out ${WORK}/new/dir/x.csv)
# A write that fails at run time (a full device) is exit 1.
if(EXISTS /dev/full)
  expect_error(1 "^foxrl: /dev/full: writing the rollout failed" rollout --env cartpole --actions ${ACTIONS} --out /dev/full)
endif()

file(REMOVE_RECURSE ${WORK})
message("messages: ok")
