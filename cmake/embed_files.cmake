# Turns files into a C source of byte arrays, so the server carries its web
# dashboard (web/) inside the binary with no files to install.
# Run as: cmake -DOUTPUT=out.c -DINPUTS="a;b" -P embed_files.cmake
# Each array ends in a NUL (not counted in len), so an empty file is valid C.
if(NOT OUTPUT OR NOT INPUTS)
  message(FATAL_ERROR "embed_files.cmake: OUTPUT and INPUTS are required")
endif()

set(body "/* Generated from web/ by cmake/embed_files.cmake; do not edit. */\n")
string(APPEND body "#include \"server/web_assets.h\"\n\n")
set(table "")
set(i 0)
foreach(path IN LISTS INPUTS)
  get_filename_component(name "${path}" NAME)
  file(READ "${path}" hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
  # Break the initializer into lines of 16 bytes (80 characters).
  string(REGEX REPLACE "((0x..,){16})" "\\1\n" hex "${hex}")
  string(APPEND body "static const unsigned char asset_${i}[] = {\n${hex}0x00};\n")
  string(APPEND table "    {\"${name}\", asset_${i}, sizeof asset_${i} - 1},\n")
  math(EXPR i "${i} + 1")
endforeach()
string(APPEND body "\nconst struct web_asset web_assets[] = {\n${table}};\n")
string(APPEND body "const size_t web_assets_count = ${i};\n")

# Only rewrite when the content changed, so an unchanged dashboard relinks nothing.
set(old "")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
endif()
if(NOT old STREQUAL body)
  file(WRITE "${OUTPUT}" "${body}")
endif()
