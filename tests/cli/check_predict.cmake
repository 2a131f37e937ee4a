# Runs `tempo predict MODEL INPUT [OPTIONS]` and checks its exit status and output:
#   -DTEMPO=… -DMODEL=… -DINPUT=… -DEXPECT_EXIT=0|1 -DEXPECT_STDOUT=regex -DEXPECT_STDERR=regex
#   [-DOPTIONS=opt;opt]
execute_process(COMMAND ${TEMPO} predict ${MODEL} ${INPUT} ${OPTIONS}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL EXPECT_EXIT)
  message(FATAL_ERROR "exit ${rc}, expected ${EXPECT_EXIT}\nstdout:\n${out}\nstderr:\n${err}")
endif()
if(NOT out MATCHES "${EXPECT_STDOUT}")
  message(FATAL_ERROR "stdout does not match '${EXPECT_STDOUT}':\n${out}")
endif()
if(NOT err MATCHES "${EXPECT_STDERR}")
  message(FATAL_ERROR "stderr does not match '${EXPECT_STDERR}':\n${err}")
endif()
