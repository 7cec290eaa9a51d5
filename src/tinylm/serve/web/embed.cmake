# cmake -DIN=index.html -DOUT=web_page.cpp -P embed.cmake
# Writes a C++ source defining tinylm::serve::web_page() (web_page.h) as the bytes of IN.
# file(READ ... HEX) instead of xxd, which is not everywhere.
if(NOT DEFINED IN OR NOT DEFINED OUT)
  message(FATAL_ERROR "usage: cmake -DIN=FILE -DOUT=FILE.cpp -P embed.cmake")
endif()
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR size "${hex_length} / 2")
if(size EQUAL 0)
  message(FATAL_ERROR "embed.cmake: ${IN} is empty")
endif()
# 16 bytes a line: "0x3c,0x21,...". (CMake's regular expressions have no {n}.)
string(REPEAT "." 32 line)
string(REGEX REPLACE "(${line})" "\\1\n" hex "${hex}")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REPLACE "\n" "\n    " bytes "${bytes}")
string(STRIP "${bytes}" bytes)
get_filename_component(name "${IN}" NAME)
file(WRITE "${OUT}"
"// Generated from ${name} by embed.cmake at build time: do not edit.
#include \"tinylm/serve/web/web_page.h\"

namespace tinylm::serve {
namespace {

constexpr unsigned char kPage[${size}] = {
    ${bytes}
};

}  // namespace

std::string_view web_page() {
  return {reinterpret_cast<const char*>(kPage), sizeof kPage};
}

}  // namespace tinylm::serve
")
