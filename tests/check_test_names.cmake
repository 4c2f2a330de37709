# Catch2 test names must not contain '[' or ';'. CTest's discovery of
# Catch2 tests reads a bracket in a name as the start of the tags, and every
# test after such a name is then merged into one CTest entry that passes
# without running them; a ';' splits the name (a CMake list), so the entry
# filters for a name that matches nothing and passes without running it. Scans every tests/test_*.cpp for TEST_CASE and
# TEMPLATE_TEST_CASE names (the first string argument).
file(GLOB sources "${TESTS_DIR}/test_*.cpp")
set(bad "")
foreach(source IN LISTS sources)
  file(READ "${source}" text)
  # Before the text is split into a list (which a ';' would cut apart).
  string(REGEX MATCH "TEST_CASE\\([ \t\r\n]*\"[^\"]*;[^\"]*\"" semicolon "${text}")
  if(semicolon)
    get_filename_component(file "${source}" NAME)
    string(REPLACE ";" "<semicolon>" semicolon "${semicolon}")
    string(APPEND bad "\n  ${file}: ${semicolon}")
  endif()
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
  message(FATAL_ERROR "test names with '[' or ';' (CTest would merge or skip tests):${bad}")
endif()
list(LENGTH sources count)
message(STATUS "test names: ${count} files checked")
