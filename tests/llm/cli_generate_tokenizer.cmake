# `wgml generate` with a tokenizer, through the linked CLI (the ONNX frontend's protobuf in the same
# process): the prompt TEXT of case CASE of ENCODINGS (tests/fixtures/llm/tokenizers/*/encodings.json)
# becomes the tokenizer library's ids (the same greedy tokens as --prompt-ids with those ids), the
# greedy tokens are EXPECTED_IDS (comma-separated), and the text, ending its line before the stats
# line on a shared pipe, is EXPECTED_TEXT (what sentencepiece / Hugging Face tokenizers decode them to).
# Run with cmake -P and -DWGML=... -DMODEL=... -DTOKENIZER=... -DENCODINGS=... -DCASE=...
# -DEXPECTED_IDS=... -DEXPECTED_TEXT=...
file(READ "${ENCODINGS}" encodings)
string(JSON prompt GET "${encodings}" cases ${CASE} text)
string(JSON prompt_count LENGTH "${encodings}" cases ${CASE} ids_with_bos)
set(library_ids "")
math(EXPR last "${prompt_count} - 1")
foreach(i RANGE ${last})
  string(JSON id GET "${encodings}" cases ${CASE} ids_with_bos ${i})
  list(APPEND library_ids ${id})
endforeach()
list(JOIN library_ids "," library_ids)
string(REPLACE "," ";" expected_ids "${EXPECTED_IDS}")
list(LENGTH expected_ids count)
set(generate "${WGML}" generate "${MODEL}" --device cpu --max-new-tokens ${count})

function(expect_ids what)
  execute_process(COMMAND ${generate} ${ARGN} --ids OUTPUT_VARIABLE output ERROR_VARIABLE errors RESULT_VARIABLE status)
  if(NOT status EQUAL 0 OR errors MATCHES "libprotobuf")
    message(FATAL_ERROR "${what}: wgml generate failed (${status}): ${errors}")
  endif()
  string(STRIP "${output}" output)
  string(REPLACE "\n" ";" got "${output}")
  if(NOT got STREQUAL expected_ids)
    message(FATAL_ERROR "${what}: wgml generate gave ids ${got}, expected ${expected_ids}")
  endif()
  set(errors "${errors}" PARENT_SCOPE)
endfunction()

expect_ids("--prompt" --tokenizer "${TOKENIZER}" --prompt "${prompt}")
if(NOT errors MATCHES "^prompt: ${prompt_count} tokens")
  message(FATAL_ERROR "--prompt '${prompt}': expected ${prompt_count} prompt tokens (${library_ids}), got: ${errors}")
endif()
expect_ids("--prompt-ids ${library_ids}" --prompt-ids "${library_ids}")

# stdout and stderr into one pipe, as a terminal or `2>&1` gets them.
execute_process(COMMAND ${generate} --tokenizer "${TOKENIZER}" --prompt "${prompt}" OUTPUT_VARIABLE output
                ERROR_VARIABLE output RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "wgml generate failed (${status}): ${output}")
endif()
string(FIND "${output}" "${EXPECTED_TEXT}\nprompt: ${prompt_count} tokens" at)
if(NOT at EQUAL 0)
  message(FATAL_ERROR "expected the text '${EXPECTED_TEXT}' on its own line, then the stats line; got:\n${output}")
endif()
message(STATUS "'${prompt}': ${count} greedy tokens and their text as expected")
