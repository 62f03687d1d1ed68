# Writes the man page and the bash completion from the ggufmap binary's
# option tables (so they never drift from --help):
#   cmake -DGGUFMAP=path/to/ggufmap -DOUT_DIR=dir -P generate_docs.cmake
foreach(doc "ggufmap.1;help;--man" "ggufmap.bash;completion;bash")
  list(GET doc 0 file)
  list(SUBLIST doc 1 -1 args)
  execute_process(COMMAND ${GGUFMAP} ${args} OUTPUT_FILE ${OUT_DIR}/${file}.tmp RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${GGUFMAP} ${args} failed: ${rc}")
  endif()
  file(RENAME ${OUT_DIR}/${file}.tmp ${OUT_DIR}/${file})
endforeach()
