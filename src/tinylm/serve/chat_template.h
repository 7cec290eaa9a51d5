#pragma once
// GPT-2 has no chat format of its own, so chat requests are rendered as plain text
// (docs/serve.md): each message as "System: ...", "User: ..." or "Assistant: ..." followed by a
// blank line, then "Assistant:" for the model to continue. The reply ends where the model
// starts the next turn (kChatStops) or at end-of-text.
#include <string>
#include <vector>

namespace tinylm::serve {

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

std::string render_chat(const std::vector<ChatMessage>& messages);

inline const std::vector<std::string> kChatStops = {"\nUser:", "\nSystem:"};

}  // namespace tinylm::serve
