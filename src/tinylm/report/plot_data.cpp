// Reading runs' metrics.jsonl into loss curves (plot.h).
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tinylm/core/error.h"
#include "tinylm/io/json_strict.h"
#include "tinylm/io/text_file.h"
#include "tinylm/report/plot.h"

namespace tinylm::report {

namespace fs = std::filesystem;

namespace {

// A step at or below the series' last one starts it again from there (see the header).
void append_point(std::vector<LossPoint>& series, LossPoint p) {
  while (!series.empty() && series.back().step >= p.step) series.pop_back();
  series.push_back(p);
}

void parse_line(std::string_view line, const std::string& where, RunCurves& run) {
  const nlohmann::ordered_json obj = io::parse_json_strict(line, where);
  check(obj.is_object(), where, ": not a JSON object");
  const auto type = obj.find("type");
  check(type != obj.end() && type->is_string(), where, ": no \"type\" string");
  const bool is_step = *type == "step";
  if (!is_step && *type != "eval") return;  // a type this reader does not know
  const auto step = obj.find("step");
  check(step != obj.end(), where, ": no \"step\"");
  // nlohmann stores non-negative integers as unsigned, negative ones as signed.
  check(step->is_number_unsigned() && step->get<uint64_t>() <= uint64_t{INT64_MAX}, where,
        ": \"step\" is not an integer >= 0");
  const char* key = is_step ? "loss" : "val_loss";
  const auto loss = obj.find(key);
  check(loss != obj.end(), where, ": no \"", key, "\"");
  if (loss->is_null()) return;  // a non-finite loss, written as null
  check(loss->is_number(), where, ": \"", key, "\" is not a number");
  const double v = loss->get<double>();
  if (!std::isfinite(v)) return;  // (nlohmann refuses numbers beyond a double's range anyway)
  append_point(is_step ? run.train : run.val, {step->get<int64_t>(), v});
}

// The name of directory d as a person would say it: "run1" for "runs/run1/", "." or "".
std::string dir_name(fs::path d) {
  if (d.empty()) d = ".";
  d = fs::absolute(d).lexically_normal();
  if (!d.has_filename()) d = d.parent_path();
  const std::string name = d.filename().string();
  return name.empty() ? d.string() : name;
}

}  // namespace

RunCurves parse_run_metrics(std::string_view text, const std::string& what) {
  check(text.find_first_not_of(" \t\r\n") != std::string_view::npos, what, ": empty");
  RunCurves run;
  size_t line_no = 0;
  for (size_t pos = 0; pos < text.size();) {
    ++line_no;
    const size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? nl : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::string where = cat(what, ":", line_no);
    if (!nlohmann::json::accept(line)) {
      if (nl == std::string_view::npos) break;  // the writer may be in the middle of it
      fail(where, ": not JSON");
    }
    parse_line(line, where, run);
  }
  return run;
}

RunCurves read_run_metrics(const std::string& path) {
  const fs::path p(path);
  std::error_code ec;
  const bool is_dir = fs::is_directory(p, ec);
  const fs::path file = is_dir ? p / "metrics.jsonl" : p;
  RunCurves run = parse_run_metrics(io::read_file(file.string()), file.string());
  if (is_dir) {
    run.name = dir_name(p);
  } else if (p.filename() == "metrics.jsonl") {
    run.name = dir_name(p.parent_path());
  } else {
    run.name = p.stem().string();
  }
  return run;
}

}  // namespace tinylm::report
