#include "tinylm/io/json_strict.h"

#include <unordered_set>
#include <vector>

#include "tinylm/core/error.h"

namespace tinylm::io {

namespace {

using Json = nlohmann::ordered_json;

// Builds the document through nlohmann's SAX interface. Its own DOM builder inserts each key
// of an ordered_json object with a linear search (ordered_map::operator[]), quadratic in the
// object's size: 1.3 s for GPT-2's 50,257-token encoder.json, 45 s under the sanitizers.
// Here a repeated key is refused with a hash set, so keys can simply be appended.
class StrictBuilder {
 public:
  explicit StrictBuilder(const std::string& what) : what_(what) {}
  Json& root() { return root_; }

  bool null() { return put(Json(nullptr)); }
  bool boolean(bool v) { return put(Json(v)); }
  bool number_integer(Json::number_integer_t v) { return put(Json(v)); }
  bool number_unsigned(Json::number_unsigned_t v) { return put(Json(v)); }
  bool number_float(Json::number_float_t v, const Json::string_t& /*text*/) { return put(Json(v)); }
  bool string(Json::string_t& v) { return put(Json(std::move(v))); }
  bool binary(Json::binary_t& v) { return put(Json::binary(std::move(v))); }
  bool start_object(size_t /*n*/) {
    check_depth();
    open_.push_back(slot(Json::object()));
    keys_.emplace_back();
    return true;
  }
  bool key(Json::string_t& k) {
    check(keys_.back().insert(k).second, what_, ": duplicate key '", k, "'");
    auto& members =
        static_cast<Json::object_t::Container&>(open_.back()->get_ref<Json::object_t&>());
    members.emplace_back(std::move(k), nullptr);
    value_slot_ = &members.back().second;
    return true;
  }
  bool end_object() {
    open_.pop_back();
    keys_.pop_back();
    return true;
  }
  bool start_array(size_t /*n*/) {
    check_depth();
    open_.push_back(slot(Json::array()));
    return true;
  }
  bool end_array() {
    open_.pop_back();
    return true;
  }
  bool parse_error(size_t /*pos*/, const std::string& /*token*/,
                   const nlohmann::detail::exception& e) {
    // nlohmann's messages start with "[json.exception.parse_error.101] "; keep the rest.
    std::string msg = e.what();
    if (const size_t p = msg.find("] "); p != std::string::npos) msg = msg.substr(p + 2);
    fail(what_, ": invalid JSON: ", msg);
  }

 private:
  void check_depth() const {
    check(open_.size() < static_cast<size_t>(kMaxJsonDepth), what_,
          ": invalid JSON: nested deeper than ", kMaxJsonDepth, " levels");
  }
  // Where the next value goes: the root, the end of the open array, or the last key's value.
  // The open containers' addresses stay valid: a container only grows while it is the
  // innermost open one.
  Json* slot(Json&& v) {
    if (open_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Json* top = open_.back();
    if (top->is_array()) {
      top->get_ref<Json::array_t&>().push_back(std::move(v));
      return &top->get_ref<Json::array_t&>().back();
    }
    *value_slot_ = std::move(v);
    return value_slot_;
  }
  bool put(Json&& v) {
    slot(std::move(v));
    return true;
  }

  const std::string& what_;
  Json root_;
  std::vector<Json*> open_;
  std::vector<std::unordered_set<std::string>> keys_;  // one set per open object
  Json* value_slot_ = nullptr;
};

}  // namespace

nlohmann::ordered_json parse_json_strict(std::string_view text, const std::string& what) {
  check(text.find('\0') == std::string_view::npos, what, ": invalid JSON: NUL byte at offset ",
        text.find('\0'));
  StrictBuilder builder(what);
  Json::sax_parse(text.begin(), text.end(), &builder);
  return std::move(builder.root());
}

}  // namespace tinylm::io
