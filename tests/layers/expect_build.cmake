# cmake -DBUILD_DIR=... -DTARGET=... -DEXPECT=pass|fail [-DMESSAGE=regex] -P expect_build.cmake
# Builds one target of the tree and checks that it compiles, or that it fails with MESSAGE.
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target ${TARGET}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(EXPECT STREQUAL "pass")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${TARGET} was expected to compile and did not:\n${out}\n${err}")
  endif()
else()
  if(rc EQUAL 0)
    message(FATAL_ERROR "${TARGET} compiled, but it includes a header of a higher layer")
  endif()
  if(NOT "${out}${err}" MATCHES "${MESSAGE}")
    message(FATAL_ERROR "${TARGET} failed, but not with '${MESSAGE}':\n${out}\n${err}")
  endif()
endif()
