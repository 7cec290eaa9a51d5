#include "tinylm/train/config_file.h"

#include <toml++/toml.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "tinylm/core/error.h"
#include "tinylm/io/json_strict.h"
#include "tinylm/io/text_file.h"
#include "tinylm/train/nanogpt_keys.h"
#include "tinylm/train/run_config.h"

namespace tinylm::train {

namespace {

using json = nlohmann::ordered_json;

// `train`'s flags that are not run settings (RunConfig fields): where the run goes, how fast
// this machine is, and the config file itself. They stay on the command line.
bool is_command_line_only(const std::string& name) {
  return name == "out" || name == "resume" || name == "config" || name == "peak-gflops";
}

bool is_setting(const std::string& name) {
  static const std::set<std::string> names = [] {
    std::set<std::string> s;
    const RunConfig c;
    RunConfig::visit(c, [&](const char* n, const auto&, FieldKind) { s.insert(n); });
    return s;
  }();
  return names.contains(name);
}

// A key as the messages show it: JSON-escaped, so a control character in it cannot break the
// one-line error.
std::string shown(const std::string& key) {
  std::string quoted =
      json(key).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  quoted.front() = '\'';
  quoted.back() = '\'';
  return quoted;
}

// The settings as merge_json reads them: each key under its dashed name, the spelling it was
// written in remembered, so that a setting given twice (n_layer and n-layer) is refused.
class Settings {
 public:
  explicit Settings(const std::string& source) : source_(source) {}

  // The dashed name a key stands for, when that is a flag (a setting or one of the command
  // line's own); any other key as written, for merge_json's "unknown setting" to name it.
  // `where` places it in the file (" (line 3)"), or is empty.
  std::string name(const std::string& key, const std::string& where) const {
    // merge_json would print such a key as it is: a newline in it would break the line.
    check(std::none_of(key.begin(), key.end(),
                       [](char ch) { return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f; }),
          source_, ": unknown setting ", shown(key), where);
    std::string dashed = key;
    std::replace(dashed.begin(), dashed.end(), '_', '-');
    const std::string n = is_setting(dashed) || is_command_line_only(dashed) ? dashed : key;
    check(!is_command_line_only(n), source_, ": ", shown(key), where,
          " is not a setting a config file may hold; pass --", n, " on the command line");
    return n;
  }

  void add(const std::string& key, const std::string& where, json value) {
    const std::string n = name(key, where);
    const auto [it, fresh] = written_.emplace(n, key);
    check(fresh, source_, ": ", shown(it->second), " and ", shown(key), where,
          " are the same setting; give it once");
    out_[n] = std::move(value);
  }

  json take() { return std::move(out_); }

 private:
  const std::string& source_;
  json out_ = json::object();
  std::map<std::string, std::string> written_;  // dashed name -> the key that gave it
};

// A string value: a NUL in it would cut a path or a name short where it is used.
json string_value(const std::string& s, const std::string& source, const std::string& key,
                  const std::string& where) {
  check(s.find('\0') == std::string::npos, source, ": ", shown(key), where,
        " holds a NUL character");
  return json(s);
}

// ---- TOML ----

std::string toml_where(const toml::node& v) {
  const toml::source_position p = v.source().begin;
  return p ? cat(" (line ", p.line, ")") : std::string();
}

// A TOML value that is not a table or an array, as JSON.
json toml_scalar(const toml::node& v, const std::string& source, const std::string& key) {
  const std::string where = toml_where(v);
  switch (v.type()) {
    case toml::node_type::string:
      return string_value(v.as_string()->get(), source, key, where);
    case toml::node_type::integer: {
      // As nlohmann's parser reads a JSON integer: unsigned when >= 0 (merge_json's type check
      // for `seed`, a uint64_t, asks for an unsigned number).
      const int64_t i = v.as_integer()->get();
      return i >= 0 ? json(static_cast<uint64_t>(i)) : json(i);
    }
    case toml::node_type::floating_point:
      return json(v.as_floating_point()->get());
    case toml::node_type::boolean:
      return json(v.as_boolean()->get());
    case toml::node_type::date:
    case toml::node_type::time:
    case toml::node_type::date_time:
      fail(source, ": ", shown(key), where, " is a date or time, which no setting takes");
    default:
      fail(source, ": ", shown(key), where,
           " holds an array or table within an array: a setting's array holds strings");
  }
}

json toml_value(const toml::node& v, const std::string& source, const std::string& key) {
  const std::string where = toml_where(v);
  check(!v.is_table(), source, ": ", shown(key), where,
        " is a table: a config file holds its settings at the top level, without [sections] ",
        "or dotted keys");
  if (!v.is_array()) return toml_scalar(v, source, key);
  json a = json::array();
  for (const toml::node& e : *v.as_array()) a.push_back(toml_scalar(e, source, key));
  return a;
}

json parse_toml(std::string_view text, const std::string& source) {
  toml::table table;
  try {
    table = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    std::string what(e.description());
    std::replace(what.begin(), what.end(), '\n', ' ');
    const toml::source_position p = e.source().begin;
    fail(source, ": TOML syntax error at line ", p.line, ", column ", p.column, ": ", what);
  }
  // toml++ keeps a table's keys sorted; the file's order makes the first error the first in
  // the file.
  std::vector<std::pair<const toml::key*, const toml::node*>> entries;
  for (const auto& [k, v] : table) entries.emplace_back(&k, &v);
  std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    return a.first->source().begin < b.first->source().begin;
  });
  Settings settings(source);
  for (const auto& [k, v] : entries) {
    const std::string key(k->str());
    // (The key is checked before its value: `out = {...}` is refused for its name.)
    settings.name(key, toml_where(*v));
    settings.add(key, toml_where(*v), toml_value(*v, source, key));
  }
  return settings.take();
}

// ---- JSON ----

json json_value(const json& v, const std::string& source, const std::string& key, bool in_array) {
  if (v.is_object()) {
    fail(source, ": ", shown(key), in_array ? " holds an object within an array" : " is an object",
         ": a config file holds its settings at the top level, not nested");
  }
  if (v.is_array()) {
    check(!in_array, source, ": ", shown(key),
          " holds an array within an array: a setting's array holds strings");
    json a = json::array();
    for (const json& e : v) a.push_back(json_value(e, source, key, true));
    return a;
  }
  if (v.is_string()) return string_value(v.get_ref<const std::string&>(), source, key, "");
  return v;  // a number, a boolean or null: merge_json checks the type
}

json parse_json(std::string_view text, const std::string& source) {
  const json doc = io::parse_json_strict(text, source);
  check(doc.is_object(), source, ": not a JSON object at the top level (a config file is one ",
        "object of settings)");
  Settings settings(source);
  for (const auto& [key, value] : doc.items()) {
    settings.name(key, "");
    settings.add(key, "", json_value(value, source, key, false));
  }
  return settings.take();
}

}  // namespace

ConfigFormat config_format(const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".toml") return ConfigFormat::toml;
  if (ext == ".json") return ConfigFormat::json;
  fail(path, ": a config file is TOML (.toml) or JSON (.json), named for its format",
       ext == ".py" ? cat("; ", kNanoGptConfigHint) : std::string());
}

json parse_config(std::string_view text, ConfigFormat format, const std::string& source) {
  return format == ConfigFormat::toml ? parse_toml(text, source) : parse_json(text, source);
}

json read_config_file(const std::string& path) {
  const ConfigFormat format = config_format(path);
  return parse_config(io::read_file(path, kMaxConfigFileBytes), format, path);
}

}  // namespace tinylm::train
