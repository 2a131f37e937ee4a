# Installs tempo into a scratch prefix, then configures, builds and runs tests/consumer there.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
foreach(step
    "${CMAKE_COMMAND};--install;${TEMPO_BINARY_DIR};--prefix;${prefix}"
    "${CMAKE_COMMAND};-S;${CONSUMER_SOURCE_DIR};-B;${WORK_DIR}/build;-DCMAKE_PREFIX_PATH=${prefix}"
    "${CMAKE_COMMAND};--build;${WORK_DIR}/build"
    "${WORK_DIR}/build/tempo_consumer;${FIXTURES_DIR}/cdmpp/compact.safetensors;${FIXTURES_DIR}/cdmpp/compact.inputs.jsonl")
  execute_process(COMMAND ${step} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer step failed (${rc}): ${step}")
  endif()
endforeach()
