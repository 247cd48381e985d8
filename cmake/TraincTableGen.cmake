# TableGen helpers shared by trainc's dialects and pass libraries: the
# generated C++ and the reference pages that docs/ keeps a copy of
# (scripts/update-docs.sh; the docs-*-up-to-date tests compare them).

# Passes.td in the current directory -> Passes.h.inc (target
# Trainc<Name>PassesIncGen) and passes.md (target trainc-<name>-pass-doc).
function(trainc_add_passes name)
  set(LLVM_TARGET_DEFINITIONS Passes.td)
  mlir_tablegen(Passes.h.inc -gen-pass-decls -name ${name})
  add_public_tablegen_target(Trainc${name}PassesIncGen)
  string(TOLOWER ${name} lower)
  add_custom_command(
    OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/passes.md
    COMMAND ${MLIR_TABLEGEN_EXE} -gen-pass-doc
            -I ${PROJECT_SOURCE_DIR} -I ${MLIR_INCLUDE_DIRS}
            ${CMAKE_CURRENT_SOURCE_DIR}/Passes.td -o ${CMAKE_CURRENT_BINARY_DIR}/passes.md
    DEPENDS Passes.td
    COMMENT "Generating the ${lower} pass reference")
  add_custom_target(trainc-${lower}-pass-doc ALL
                    DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/passes.md)
endfunction()

# The reference page of dialect <dialect> from <td> (and the .td files it
# includes, DEPENDS ...) -> <dialect>.md (target trainc-<dialect>-doc).
function(trainc_add_dialect_doc dialect td)
  add_custom_command(
    OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/${dialect}.md
    COMMAND ${MLIR_TABLEGEN_EXE} -gen-dialect-doc -dialect=${dialect}
            -I ${PROJECT_SOURCE_DIR} -I ${MLIR_INCLUDE_DIRS}
            ${CMAKE_CURRENT_SOURCE_DIR}/${td} -o ${CMAKE_CURRENT_BINARY_DIR}/${dialect}.md
    DEPENDS ${td} ${ARGN}
    COMMENT "Generating the ${dialect} dialect reference")
  add_custom_target(trainc-${dialect}-doc ALL
                    DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/${dialect}.md)
endfunction()
