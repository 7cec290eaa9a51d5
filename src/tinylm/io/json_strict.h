#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace tinylm::io {

// Arrays and objects nested deeper than this are refused: no file or request tinylm reads
// nests more than a few levels, and a deep tree costs memory (and recursion) for nothing.
inline constexpr int kMaxJsonDepth = 64;

// Parses JSON, rejecting what nlohmann would silently accept: a key repeated within one
// object (the last one would win) and a NUL byte (its parser stops there), and nesting deeper
// than kMaxJsonDepth (refused at the first level too deep, before more is read). Objects keep
// their keys in file order. `what` names the source in error messages.
nlohmann::ordered_json parse_json_strict(std::string_view text, const std::string& what);

}  // namespace tinylm::io
