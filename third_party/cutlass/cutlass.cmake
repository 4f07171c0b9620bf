# CUTLASS headers for nvfp4_gemm. CUTLASS is a dependency, never vendored: this folder holds only
# this glue and the pin (PIN). Sources, in order of precedence:
#   1. -DNVFP4_GEMM_CUTLASS_DIR=<checkout> or the environment variable of the same name: a CUTLASS
#      source checkout (its include/ and tools/util/include/ are used);
#   2. the pinned PyPI package nvidia-cutlass (a build requirement), found through the Python that
#      runs the build: <site-packages>/cutlass_library/source/{include,tools/util/include}.
# Defines the INTERFACE target nvfp4_gemm::cutlass.

file(READ "${CMAKE_CURRENT_LIST_DIR}/PIN" NVFP4_GEMM_CUTLASS_PIN)
string(STRIP "${NVFP4_GEMM_CUTLASS_PIN}" NVFP4_GEMM_CUTLASS_PIN)

if(NOT NVFP4_GEMM_CUTLASS_DIR AND DEFINED ENV{NVFP4_GEMM_CUTLASS_DIR})
  set(NVFP4_GEMM_CUTLASS_DIR "$ENV{NVFP4_GEMM_CUTLASS_DIR}")
endif()

if(NVFP4_GEMM_CUTLASS_DIR)
  set(_cutlass_root "${NVFP4_GEMM_CUTLASS_DIR}")
  set(_cutlass_origin "NVFP4_GEMM_CUTLASS_DIR")
else()
  # find_spec locates the package without importing it (importing pulls in its Python deps).
  execute_process(
    COMMAND "${Python_EXECUTABLE}" -c
      "import importlib.util as u, os; s = u.find_spec('cutlass_library'); print(os.path.join(list(s.submodule_search_locations)[0], 'source') if s else '')"
    OUTPUT_VARIABLE _cutlass_root OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE _cutlass_rc)
  if(NOT _cutlass_rc EQUAL 0 OR NOT _cutlass_root)
    message(FATAL_ERROR
      "CUTLASS not found: install the pinned package (pip install nvidia-cutlass==${NVFP4_GEMM_CUTLASS_PIN}) "
      "or point NVFP4_GEMM_CUTLASS_DIR at a CUTLASS checkout.")
  endif()
  set(_cutlass_origin "nvidia-cutlass package")
endif()

set(_cutlass_version_h "${_cutlass_root}/include/cutlass/version.h")
if(NOT EXISTS "${_cutlass_version_h}")
  message(FATAL_ERROR "CUTLASS at ${_cutlass_root} (from ${_cutlass_origin}) has no include/cutlass/version.h")
endif()
file(STRINGS "${_cutlass_version_h}" _cutlass_version_lines REGEX "#define CUTLASS_(MAJOR|MINOR|PATCH) ")
set(_cutlass_version "")
foreach(_part MAJOR MINOR PATCH)
  foreach(_line IN LISTS _cutlass_version_lines)
    if(_line MATCHES "#define CUTLASS_${_part} ([0-9]+)")
      list(APPEND _cutlass_version "${CMAKE_MATCH_1}")
    endif()
  endforeach()
endforeach()
list(JOIN _cutlass_version "." _cutlass_version)
# The pin names the PyPI release (4.2.0.0); its headers say 4.2.0.
string(REGEX MATCH "^[0-9]+\\.[0-9]+\\.[0-9]+" _cutlass_pin_headers "${NVFP4_GEMM_CUTLASS_PIN}")
if(NOT _cutlass_version STREQUAL _cutlass_pin_headers)
  message(FATAL_ERROR
    "CUTLASS ${_cutlass_version} at ${_cutlass_root} (from ${_cutlass_origin}); nvfp4_gemm is pinned to "
    "${_cutlass_pin_headers} (third_party/cutlass/PIN). Kernel configs and layouts are proved against that version.")
endif()
message(STATUS "nvfp4_gemm: CUTLASS ${_cutlass_version} from ${_cutlass_origin}: ${_cutlass_root}")

add_library(nvfp4_gemm_cutlass INTERFACE)
add_library(nvfp4_gemm::cutlass ALIAS nvfp4_gemm_cutlass)
target_include_directories(nvfp4_gemm_cutlass SYSTEM INTERFACE
  "${_cutlass_root}/include" "${_cutlass_root}/tools/util/include")
