# SPDX-License-Identifier: Apache-2.0
# Embeds one text file into a C source as a NUL-terminated char array, byte for byte, so
# OpenCL build-log line numbers match the file. Run as:
#   cmake -DINPUT=file.cl -DOUTPUT=file.c -DSYMBOL=kp_kernel_file_cl -P embed.cmake
if(NOT INPUT OR NOT OUTPUT OR NOT SYMBOL)
  message(FATAL_ERROR "embed.cmake needs INPUT, OUTPUT and SYMBOL")
endif()
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_len)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
# Break the initializer into lines of 16 bytes for readable generated code.
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){16})" "\\1\n    " bytes "${bytes}")
math(EXPR n "${hex_len} / 2")
get_filename_component(name "${INPUT}" NAME)
file(WRITE "${OUTPUT}.tmp"
  "/* Generated from ${name} by embed.cmake; do not edit. */\n"
  "#include <stddef.h>\n"
  "const char ${SYMBOL}[] = {\n    ${bytes}0x00};\n"
  "const size_t ${SYMBOL}_len = ${n};\n")
# Only touch the output when it changed, so dependents do not rebuild needlessly.
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
