# ctest driver of corpus.agreement: a fresh corpus, then the check.
# cmake -DCORPUS_DIR=... -DMAKE_CORPUS=... -DCHECK_CORPUS=... -DORACLE=... -P run_agreement.cmake
file(REMOVE_RECURSE "${CORPUS_DIR}")
execute_process(COMMAND "${MAKE_CORPUS}" "${CORPUS_DIR}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ggufmap-corpus failed (${rc})")
endif()
execute_process(COMMAND "${CHECK_CORPUS}" "${CORPUS_DIR}/cases.tsv" "${ORACLE}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ggufmap-corpus-check: reader and llama.cpp disagree (${rc})")
endif()
