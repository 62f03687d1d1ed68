# ggml-config.cmake - the prebuilt ggml of the oracle as a CMake package, so
# that llama.cpp's own build (configured with -DLLAMA_USE_SYSTEM_GGML=ON
# -Dggml_DIR=<this directory>) compiles only libllama and links it to the
# very ggml libraries (CPU kernels included) that the unpatched prebuilt
# libllama uses.  Then a patched and an unpatched load compute with the same
# code, and any difference in their outputs comes from the loader.
#
# Set by tests/patch/build.sh on the cmake command line:
#   GGUFMAP_GGML_LIB        the prebuilt libggml.<release>.so
#   GGUFMAP_GGML_BASE_LIB   the prebuilt libggml-base.so
#   GGUFMAP_GGML_INCLUDE    the matching ggml/include headers
foreach(_var GGUFMAP_GGML_LIB GGUFMAP_GGML_BASE_LIB GGUFMAP_GGML_INCLUDE)
  if(NOT EXISTS "${${_var}}")
    message(FATAL_ERROR "ggml-config.cmake: ${_var} does not exist: '${${_var}}'")
  endif()
endforeach()

add_library(ggml::ggml-base SHARED IMPORTED)
set_target_properties(ggml::ggml-base PROPERTIES
  IMPORTED_LOCATION "${GGUFMAP_GGML_BASE_LIB}"
  INTERFACE_INCLUDE_DIRECTORIES "${GGUFMAP_GGML_INCLUDE}")

add_library(ggml::ggml SHARED IMPORTED)
set_target_properties(ggml::ggml PROPERTIES
  IMPORTED_LOCATION "${GGUFMAP_GGML_LIB}"
  INTERFACE_LINK_LIBRARIES ggml::ggml-base)

set(ggml_FOUND TRUE)
