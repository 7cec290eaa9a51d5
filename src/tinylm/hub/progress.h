#pragma once
// The download's line on stderr: while a file arrives, a line redrawn in place (only on a
// terminal, at most a few times a second); when it is done, one summary line that stays:
//   config.json: 298 B, 100%, 1.2 MB/s
//   model.safetensors: 12.4 MB of 708 MB, 1%, 45.1 MB/s        (redrawn)
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace tinylm::hub {

class Progress {
 public:
  // `out` null: silent. `live`: redraw the line while a file arrives (out is a terminal).
  Progress(std::FILE* out, bool live) : out_(out), live_(live) {}

  void start(const std::string& name, uint64_t total_bytes, uint64_t already_bytes);
  void advance(uint64_t bytes);
  // The summary line: "NAME: SIZE, 100%, RATE" (and ", resumed at N" when it was).
  void finish();
  // Ends a redrawn line that will not finish (the transfer failed), so that the error is a line
  // of its own.
  void interrupt();
  // A file already in the cache: "NAME: SIZE, cached".
  void cached(const std::string& name, uint64_t bytes);

 private:
  std::string line(bool done) const;

  std::FILE* out_;
  bool live_;
  bool drawn_line_ = false;  // a redrawn line is on the terminal, unfinished
  std::string name_;
  uint64_t total_ = 0, resumed_at_ = 0, done_ = 0;
  std::chrono::steady_clock::time_point started_, drawn_;
};

// "708 KB", "12.4 MB", "1.2 GB" (decimal units, as the Hub shows sizes); under 1000: "298 B".
std::string bytes_text(double bytes);

}  // namespace tinylm::hub
