// The list of trainable families (family.h): the lookup by --arch, the flags each takes, and the
// memory check of a fresh model's shape.
#include "tinylm/train/family.h"

#include <unistd.h>

#include <algorithm>

#include "tinylm/core/error.h"
#include "tinylm/train/run_config.h"

namespace tinylm::train {

void check_fits_memory(const std::string& what, int64_t params) {
  const double need = 16.0 * static_cast<double>(params);
  const double have = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) *
                      static_cast<double>(::sysconf(_SC_PAGE_SIZE));
  check(have <= 0 || need <= have, what, ": ", params, " parameters need about ",
        static_cast<int64_t>(need / 1e9 + 1),
        " GB for weights, gradients and optimizer moments; this machine has ",
        static_cast<int64_t>(have / 1e9), " GB");
}

std::string TrainFamilies::names(bool (*has)(const TrainFamily&)) const {
  std::vector<std::string_view> names;
  for (const Entry& e : entries_) {
    if (has(*e.family)) names.push_back(e.name);
  }
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += names[i];
  }
  return out;
}

namespace {

bool takes(std::string_view list, std::string_view flag) {
  for (size_t at = 0; at < list.size();) {
    const size_t end = std::min(list.find(' ', at), list.size());
    if (list.substr(at, end - at) == flag) return true;
    at = end + 1;
  }
  return false;
}

bool takes(const TrainFamily& f, std::string_view flag) {
  return takes(f.shape, flag) || takes(f.options, flag);
}

}  // namespace

bool TrainFamilies::takes_flag(const TrainFamily& family, std::string_view flag) const {
  if (takes(family, flag)) return true;
  return std::none_of(entries_.begin(), entries_.end(),
                      [&](const Entry& e) { return takes(*e.family, flag); });
}

void TrainFamilies::check_flags(std::string_view arch, const nlohmann::ordered_json& given) const {
  const TrainFamily& family = find(arch);
  const bool init_from = given.contains("init-from") && given["init-from"] != "";
  for (const auto& item : given.items()) {
    const std::string& flag = item.key();
    if (init_from && takes(family.shape, flag)) {
      throw FlagError(cat("--", flag, " sets a fresh model's shape; the model from --init-from ",
                          "has its own (leave --", flag, " out)"));
    }
    if (takes_flag(family, flag)) continue;
    std::string others;
    for (const Entry& e : entries_) {
      if (takes(*e.family, flag)) others += (others.empty() ? "" : " and ") + std::string(e.name);
    }
    throw FlagError(cat("--", flag, " does not apply to --arch ", arch, " (only to ", others, ")"));
  }
}

const TrainFamily& TrainFamilies::find(std::string_view arch) const {
  for (const Entry& e : entries_) {
    if (e.name == arch) return *e.family;
  }
  throw FlagError(cat("--arch ", arch, ": unknown (expected ",
                      names([](const TrainFamily&) { return true; }), ")"));
}

}  // namespace tinylm::train
