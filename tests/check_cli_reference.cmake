# docs/cli.md keeps step with the tool's --help. Runs `foxrl --help` to find
# the subcommands (and, for one with subcommands of its own such as
# `dataset`, its --help for those), then each leaf subcommand's --help, and
# compares its options with the option table of that subcommand's section of
# docs/cli.md: the text from its `## foxrl <cmd>` heading to the next `## `
# heading, where a table row whose first cell starts with `--name`
# documents the option. Fails naming the subcommand and the option when an
# option of --help is not documented, when the section documents an option
# --help no longer has, when a subcommand has no section, or when a section
# names a subcommand the tool no longer has. `--help` itself is left out
# (every subcommand has it; the page says so once).
#   cmake -DFOXRL=<foxrl binary> -DDOC=<docs/cli.md> -P check_cli_reference.cmake
cmake_minimum_required(VERSION 3.23)  # as the project: IN_LIST, continue()
if(NOT FOXRL OR NOT DOC)
  message(FATAL_ERROR "usage: cmake -DFOXRL=<foxrl> -DDOC=<docs/cli.md> -P check_cli_reference.cmake")
endif()

# Text as a list of lines. Brackets and semicolons would confuse CMake's
# list splitting, so they become placeholders first (the names compared
# below contain neither).
function(text_lines text out)
  string(REPLACE ";" "<sc>" text "${text}")
  string(REPLACE "[" "<lb>" text "${text}")
  string(REPLACE "]" "<rb>" text "${text}")
  string(REPLACE "\r" "" text "${text}")
  string(REPLACE "\n" ";" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# `foxrl <args> --help`: its output as lines.
function(help_lines out)
  execute_process(COMMAND ${FOXRL} ${ARGN} --help RESULT_VARIABLE rc OUTPUT_VARIABLE text ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " args "${ARGN}")
    message(FATAL_ERROR "`foxrl ${args} --help` exited ${rc}: ${err}")
  endif()
  text_lines("${text}" lines)
  set(${out} "${lines}" PARENT_SCOPE)
endfunction()

# The subcommands a --help lists (its "Subcommands:" block, CLI11's layout:
# two spaces, the name, then the description).
function(help_subcommands lines out)
  set(names "")
  set(in_block FALSE)
  foreach(line IN LISTS lines)
    if(line MATCHES "^Subcommands:")
      set(in_block TRUE)
    elseif(in_block AND line MATCHES "^  ([a-z][a-z0-9-]*)( |$)")
      list(APPEND names "${CMAKE_MATCH_1}")
    elseif(in_block AND NOT line MATCHES "^ ")
      set(in_block FALSE)
    endif()
  endforeach()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

# The long options a --help lists: lines that start with two spaces and the
# option (`  --name ...` or `  -h,--name ...`); wrapped descriptions are
# indented further, so an option they mention does not count.
function(help_options lines out)
  set(options "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^  (-[A-Za-z0-9],)?(--[A-Za-z0-9][A-Za-z0-9_-]*)")
      if(NOT CMAKE_MATCH_2 STREQUAL "--help")
        list(APPEND options "${CMAKE_MATCH_2}")
      endif()
    endif()
  endforeach()
  list(REMOVE_DUPLICATES options)
  set(${out} "${options}" PARENT_SCOPE)
endfunction()

# The leaf subcommands, as "train", "dataset info", ... (a subcommand with
# subcommands of its own is documented through those).
help_lines(top)
help_subcommands("${top}" firsts)
if(NOT firsts)
  message(FATAL_ERROR "`foxrl --help` lists no subcommands")
endif()
set(commands "")
foreach(first IN LISTS firsts)
  help_lines(lines ${first})
  help_subcommands("${lines}" seconds)
  if(seconds)
    foreach(second IN LISTS seconds)
      list(APPEND commands "${first} ${second}")
    endforeach()
  else()
    list(APPEND commands "${first}")
  endif()
endforeach()

# The sections of the page: `## foxrl <command>` up to the next `## `.
file(READ "${DOC}" doc)
text_lines("${doc}" doc_lines)
set(sections "")
set(current "")
foreach(line IN LISTS doc_lines)
  if(line MATCHES "^## ")
    set(current "")
    if(line MATCHES "^## foxrl ([a-z][a-z0-9 -]*[a-z0-9])[ \t]*$")
      set(current "${CMAKE_MATCH_1}")
      string(REPLACE " " "_" key "${current}")
      list(APPEND sections "${current}")
      set(documented_${key} "")
    endif()
  elseif(current AND line MATCHES "^\\|[ \t]*`(-[A-Za-z0-9], *)?(--[A-Za-z0-9][A-Za-z0-9_-]*)")
    list(APPEND documented_${key} "${CMAKE_MATCH_2}")
  endif()
endforeach()

set(problems "")
foreach(command IN LISTS commands)
  string(REPLACE " " "_" key "${command}")
  if(NOT command IN_LIST sections)
    string(APPEND problems "\n  foxrl ${command}: no `## foxrl ${command}` section in ${DOC}")
    continue()
  endif()
  string(REPLACE " " ";" args "${command}")
  help_lines(lines ${args})
  help_options("${lines}" options)
  foreach(option IN LISTS options)
    if(NOT option IN_LIST documented_${key})
      string(APPEND problems "\n  foxrl ${command}: option ${option} of --help is not documented in its section")
    endif()
  endforeach()
  foreach(option IN LISTS documented_${key})
    if(NOT option IN_LIST options)
      string(APPEND problems "\n  foxrl ${command}: the section documents ${option}, which --help does not list")
    endif()
  endforeach()
endforeach()
foreach(section IN LISTS sections)
  if(NOT section IN_LIST commands)
    string(APPEND problems "\n  foxrl ${section}: a section in ${DOC}, but `foxrl --help` has no such subcommand")
  endif()
endforeach()

if(problems)
  message(FATAL_ERROR "docs/cli.md is out of step with the tool's --help:${problems}")
endif()
list(LENGTH commands count)
message("cli reference: ok (${count} subcommands)")
