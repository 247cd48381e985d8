# trainc_add_model(): compiles an ONNX model into a model library at build
# time and gives it to the project as an imported library target. Included
# by traincConfig.cmake, which defines trainc::trainc, trainc::runtime and
# trainc_RUNTIME_LIBRARY; docs/CMAKE.md describes every argument.
#
#   trainc_add_model(<target> MODEL <file.onnx>
#                    [NAME <name>] [OUTPUT_DIRECTORY <dir>] [BATCH <n>]
#                    [LOSS <loss>] [OPTIMIZER <optimizer>] [LR <rate>]
#                    [TARGET cpu|cuda] [GPU_ARCH <sm_XY>...] [CUDA_PATH <dir>]
#                    [CPU <llvm-cpu>] [AMP off|bf16|fp16|bf16-storage]
#                    [MEMORY_BUDGET <bytes>|<n>%] [DATA_PARALLEL]
#                    [OPTIONS <flag>...])
include_guard(GLOBAL)

# The values `trainc compile` accepts for FLAG, read from its --help
# ("--optimizer TEXT:{sgd,adam,adamw,adagrad}") once per configure, so the
# arguments are checked against the installed trainc, not a copy of its
# lists.
function(_trainc_accepted_values flag out)
  get_property(help GLOBAL PROPERTY _TRAINC_COMPILE_HELP)
  if(NOT help)
    execute_process(COMMAND "${trainc_EXECUTABLE}" compile --help
                    OUTPUT_VARIABLE help ERROR_VARIABLE error
                    RESULT_VARIABLE status)
    if(NOT status EQUAL 0)
      message(FATAL_ERROR "trainc_add_model: '${trainc_EXECUTABLE} compile "
                          "--help' failed (${status}): ${error}")
    endif()
    set_property(GLOBAL PROPERTY _TRAINC_COMPILE_HELP "${help}")
  endif()
  if(NOT help MATCHES "${flag} TEXT:{([^}]*)}")
    message(FATAL_ERROR "trainc_add_model: '${trainc_EXECUTABLE} compile "
                        "--help' lists no values for ${flag}")
  endif()
  string(REPLACE "," ";" values "${CMAKE_MATCH_1}")
  set(${out} "${values}" PARENT_SCOPE)
endfunction()

# Fails unless ARGUMENT's VALUE is one of the values trainc accepts for FLAG.
function(_trainc_check_choice where argument value flag)
  _trainc_accepted_values(${flag} accepted)
  if(NOT value IN_LIST accepted)
    list(JOIN accepted ", " accepted)
    message(FATAL_ERROR "${where}: ${argument} '${value}' is not one trainc "
                        "accepts (${accepted})")
  endif()
endfunction()

# Fails unless ARGUMENT's VALUE matches PATTERN and is above zero.
function(_trainc_check_positive where argument value kind pattern)
  if(NOT value MATCHES "${pattern}" OR NOT value GREATER 0)
    message(FATAL_ERROR "${where}: ${argument} must be a positive ${kind}, "
                        "got '${value}'")
  endif()
endfunction()

function(trainc_add_model target)
  set(where "trainc_add_model(${target})")
  cmake_parse_arguments(PARSE_ARGV 1 ARG "DATA_PARALLEL"
    "MODEL;NAME;OUTPUT_DIRECTORY;BATCH;LOSS;OPTIMIZER;LR;TARGET;CUDA_PATH;CPU;AMP;MEMORY_BUDGET"
    "OPTIONS;GPU_ARCH")
  if(ARG_UNPARSED_ARGUMENTS)
    list(JOIN ARG_UNPARSED_ARGUMENTS " " unknown)
    message(FATAL_ERROR "${where}: unknown argument(s) '${unknown}' "
                        "(expected MODEL, NAME, "
                        "OUTPUT_DIRECTORY, BATCH, LOSS, OPTIMIZER, LR, TARGET, "
                        "GPU_ARCH, CUDA_PATH, CPU, AMP, MEMORY_BUDGET, "
                        "DATA_PARALLEL, OPTIONS)")
  endif()
  # An empty OPTIONS list is fine (OPTIONS ${EXTRA_FLAGS}).
  list(REMOVE_ITEM ARG_KEYWORDS_MISSING_VALUES OPTIONS)
  foreach(keyword IN LISTS ARG_KEYWORDS_MISSING_VALUES)
    message(FATAL_ERROR "${where}: ${keyword} needs a value")
  endforeach()
  if(TARGET ${target})
    message(FATAL_ERROR "${where}: a target named '${target}' already exists")
  endif()

  if(NOT DEFINED ARG_MODEL)
    message(FATAL_ERROR "${where}: MODEL (the .onnx file) is required")
  endif()
  get_filename_component(model "${ARG_MODEL}" ABSOLUTE
                         BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  # A model another custom command writes need not exist yet.
  get_source_file_property(generated "${model}" GENERATED)
  if(NOT generated AND (NOT EXISTS "${model}" OR IS_DIRECTORY "${model}"))
    message(FATAL_ERROR "${where}: MODEL '${ARG_MODEL}' does not exist "
                        "(looked for ${model})")
  endif()

  if(DEFINED ARG_NAME)
    set(name "${ARG_NAME}")
  else()
    string(MAKE_C_IDENTIFIER "${target}" name)
  endif()
  if(NOT name MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
    message(FATAL_ERROR "${where}: NAME '${name}' must be a C identifier "
                        "(it names lib<NAME>.so and <NAME>.h)")
  endif()

  if(NOT DEFINED ARG_TARGET)
    set(ARG_TARGET cpu)
  endif()
  if(NOT ARG_TARGET IN_LIST trainc_TARGETS)
    list(JOIN trainc_TARGETS ", " targets)
    message(FATAL_ERROR "${where}: TARGET '${ARG_TARGET}' is unknown (trainc "
                        "builds: ${targets})")
  endif()
  set(flags)
  set(runtime "${trainc_RUNTIME_LIBRARY}")
  if(ARG_TARGET STREQUAL "cuda")
    set(runtime "${trainc_CUDA_RUNTIME_LIBRARY}")
    list(APPEND flags --target cuda)
    if(DEFINED ARG_GPU_ARCH)
      list(JOIN ARG_GPU_ARCH "," archs)
      list(APPEND flags --gpu-arch "${archs}")
    endif()
    if(DEFINED ARG_CUDA_PATH)
      list(APPEND flags --cuda-path "${ARG_CUDA_PATH}")
    endif()
  elseif(DEFINED ARG_GPU_ARCH OR DEFINED ARG_CUDA_PATH)
    message(FATAL_ERROR "${where}: GPU_ARCH and CUDA_PATH apply to TARGET "
                        "cuda only (this is TARGET ${ARG_TARGET})")
  endif()
  # BATCH, LOSS, ... become trainc compile's --batch, --loss, ...
  foreach(argument BATCH LOSS OPTIMIZER LR CPU AMP MEMORY_BUDGET)
    if(NOT DEFINED ARG_${argument})
      continue()
    endif()
    set(value "${ARG_${argument}}")
    string(TOLOWER "--${argument}" flag)
    string(REPLACE "_" "-" flag "${flag}")
    if(argument STREQUAL "BATCH")
      _trainc_check_positive("${where}" BATCH "${value}" integer "^[0-9]+$")
    elseif(argument STREQUAL "LR")
      _trainc_check_positive("${where}" LR "${value}" number
        "^([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?$")
    elseif(argument MATCHES "^(LOSS|OPTIMIZER|AMP)$")
      _trainc_check_choice("${where}" ${argument} "${value}" ${flag})
    elseif(argument STREQUAL "MEMORY_BUDGET" AND
           NOT value MATCHES "^([1-9][0-9]*|[0-9]+(\\.[0-9]+)?%)$")
      message(FATAL_ERROR "${where}: MEMORY_BUDGET must be bytes or N%, got "
                          "'${value}'")
    endif()
    list(APPEND flags ${flag} ${value})
  endforeach()
  # The step averages its gradients over an MPI job (the library links
  # Open MPI and libtrainc_rt_mpi.a, installed beside the runtime).
  if(ARG_DATA_PARALLEL)
    list(APPEND flags --data-parallel)
  endif()
  foreach(option IN LISTS ARG_OPTIONS)
    if(option MATCHES "^(-o|--output|--emit|--runtime-library)(=.*)?$")
      message(FATAL_ERROR "${where}: OPTIONS may not contain "
                          "'${CMAKE_MATCH_1}' (trainc_add_model sets it)")
    endif()
  endforeach()
  list(APPEND flags ${ARG_OPTIONS})

  if(DEFINED ARG_OUTPUT_DIRECTORY)
    get_filename_component(directory "${ARG_OUTPUT_DIRECTORY}" ABSOLUTE
                           BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  else()
    set(directory "${CMAKE_CURRENT_BINARY_DIR}/trainc/${name}")
  endif()
  # trainc writes into a staging directory; only files whose contents
  # changed are copied out, so that touching the model (or a trainc that
  # produces the same code) rebuilds nothing downstream.
  set(staging "${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/${target}.trainc")
  # The include directory of an imported target must exist at generate time.
  file(MAKE_DIRECTORY "${directory}" "${staging}")
  set(library "${directory}/lib${name}.so")
  set(header "${directory}/${name}.h")
  set(manifest "${directory}/${name}.json")
  add_custom_command(
    OUTPUT "${library}" "${header}" "${manifest}"
    COMMAND "${CMAKE_COMMAND}" -E make_directory "${staging}"
    COMMAND trainc::trainc compile "${model}" ${flags}
            --runtime-library "${runtime}"
            -o "${staging}/lib${name}.so"
    COMMAND "${CMAKE_COMMAND}" -E copy_if_different
            "${staging}/lib${name}.so" "${staging}/${name}.h"
            "${staging}/${name}.json" "${directory}"
    DEPENDS "${model}" "$<TARGET_FILE:trainc::trainc>"
            "${runtime}"
    COMMENT "Compiling model ${name} with trainc (${model})"
    VERBATIM)
  add_custom_target(${target}_compile ALL
                    DEPENDS "${library}" "${header}" "${manifest}")

  add_library(${target} SHARED IMPORTED GLOBAL)
  set_target_properties(${target} PROPERTIES
    IMPORTED_LOCATION "${library}"
    IMPORTED_SONAME "lib${name}.so"
    INTERFACE_INCLUDE_DIRECTORIES "${directory}"
    INTERFACE_LINK_LIBRARIES trainc::runtime
    TRAINC_HEADER "${header}"
    TRAINC_MANIFEST "${manifest}")
  # Whatever links the model builds it first (CMake follows an imported
  # target's utility dependencies).
  add_dependencies(${target} ${target}_compile)
endfunction()
