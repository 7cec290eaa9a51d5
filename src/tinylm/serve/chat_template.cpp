#include "tinylm/serve/chat_template.h"

namespace tinylm::serve {

std::string render_chat(const std::vector<ChatMessage>& messages) {
  std::string text;
  for (const ChatMessage& m : messages) {
    const char* name = m.role == "system" ? "System" : m.role == "user" ? "User" : "Assistant";
    text += name;
    text += ": ";
    text += m.content;
    text += "\n\n";
  }
  return text + "Assistant:";
}

}  // namespace tinylm::serve
