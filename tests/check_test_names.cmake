# Catch2 test names must not contain '[': CTest's discovery of Catch2 tests
# reads a bracket in a name as the start of the tags, and every test after
# such a name is then merged into one CTest entry that passes without
# running them. Scans every tests/test_*.cpp for TEST_CASE and
# TEMPLATE_TEST_CASE names (the first string argument).
file(GLOB sources "${TESTS_DIR}/test_*.cpp")
set(bad "")
foreach(source IN LISTS sources)
  file(READ "${source}" text)
  string(REGEX MATCHALL "TEST_CASE\\([ \t\r\n]*\"[^\"]*\"" cases "${text}")
  foreach(case IN LISTS cases)
    string(REGEX REPLACE "^TEST_CASE\\([ \t\r\n]*\"" "" name "${case}")
    if(name MATCHES "\\[")
      get_filename_component(file "${source}" NAME)
      string(APPEND bad "\n  ${file}: \"${name}")
    endif()
  endforeach()
endforeach()
if(bad)
  message(FATAL_ERROR "test names with '[' (CTest would merge the tests after them):${bad}")
endif()
list(LENGTH sources count)
message(STATUS "test names: ${count} files checked")
