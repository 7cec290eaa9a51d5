#include "tinylm/core/param_store.h"

#include "tinylm/core/error.h"

namespace tinylm {

const ParamEntry& ParamLayout::add(std::string name, Shape shape, ParamRole role) {
  check(align_ >= 1, "[ParamLayout] alignment must be at least 1");
  check(find(name) == nullptr, "[ParamLayout] duplicate parameter name '", name, "'");
  ParamEntry e;
  e.numel = static_cast<size_t>(shape_numel(shape));
  e.offset = (total_ + align_ - 1) / align_ * align_;
  e.role = role;
  e.name = std::move(name);
  e.shape = std::move(shape);
  total_ = e.offset + e.numel;
  index_.emplace(e.name, entries_.size());
  entries_.push_back(std::move(e));
  return entries_.back();
}

const ParamEntry* ParamLayout::find(std::string_view name) const {
  const auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &entries_[it->second];
}

const ParamEntry& ParamLayout::at(std::string_view name) const {
  const ParamEntry* e = find(name);
  check(e != nullptr, "[ParamLayout] no parameter named '", name, "'");
  return *e;
}

}  // namespace tinylm
