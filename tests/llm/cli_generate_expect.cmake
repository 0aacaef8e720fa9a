# One `wgml generate` run: its exit status is STATUS ("0" or "error"), its stderr matches STDERR (a
# regular expression) and, with IDS given, it printed that many token ids. ARGS are its arguments
# after `generate`, separated by "|". Run with cmake -P and -DWGML=... -DARGS=... -DSTATUS=...
# -DSTDERR=... [-DIDS=...] [-DEMPTY_LAST_ARG=1]
string(REPLACE "|" ";" args "${ARGS}")
# A list drops empty items: EMPTY_LAST_ARG passes "" after them (`--prompt ""`).
if(EMPTY_LAST_ARG)
  execute_process(COMMAND "${WGML}" generate ${args} "" OUTPUT_VARIABLE output ERROR_VARIABLE errors RESULT_VARIABLE status)
else()
  execute_process(COMMAND "${WGML}" generate ${args} OUTPUT_VARIABLE output ERROR_VARIABLE errors RESULT_VARIABLE status)
endif()
if(STATUS STREQUAL "0" AND NOT status EQUAL 0)
  message(FATAL_ERROR "expected success, got exit status ${status}: ${errors}")
elseif(STATUS STREQUAL "error" AND (status EQUAL 0 OR NOT status MATCHES "^[0-9]+$"))
  message(FATAL_ERROR "expected an error exit, got '${status}': ${errors}")
endif()
if(NOT errors MATCHES "${STDERR}")
  message(FATAL_ERROR "stderr does not match '${STDERR}':\n${errors}")
endif()
if(DEFINED IDS)
  string(REGEX MATCHALL "[0-9]+\n" lines "${output}")
  list(LENGTH lines count)
  if(NOT count EQUAL IDS)
    message(FATAL_ERROR "expected ${IDS} token ids, got ${count}:\n${output}")
  endif()
endif()
message(STATUS "exit status ${status}; stderr: ${errors}")
