#pragma once
// Stop sequences over streamed text: text that could still be the start of a stop sequence is
// held back until the next piece settles it, so a client never receives part of a stop
// sequence, and the text before the first complete one is all that is ever sent.
#include <string>
#include <string_view>
#include <vector>

namespace tinylm::generate {

class StopText {
 public:
  explicit StopText(std::vector<std::string> stops = {}) : stops_(std::move(stops)) {}
  // Adds a piece of text; returns what can be sent now. After a stop sequence is complete,
  // returns the text before it and stopped() is true; later pieces are ignored.
  std::string push(std::string_view piece);
  // The end of the text: whatever is held back.
  std::string finish();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
};

}  // namespace tinylm::generate
