#pragma once
// The web page of tinylm serve (GET /): index.html beside this header, one self-contained file
// (inline CSS and JavaScript, nothing fetched from elsewhere), compiled into the binary by
// embed.cmake at build time (CMakeLists.txt here: the tinylm_web library).
#include <string_view>

namespace tinylm::serve {

// The page's bytes (UTF-8 HTML; serve as "text/html; charset=utf-8"). Static storage: the view
// stays valid for the life of the program.
std::string_view web_page();

}  // namespace tinylm::serve
