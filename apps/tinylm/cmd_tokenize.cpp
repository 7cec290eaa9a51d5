// tinylm tokenize: text to GPT-2 token ids, or ids back to text with --decode.
#include <cstdio>
#include <sstream>

#include "commands.h"
#include "gpt2_common.h"
#include "tinylm/core/error.h"

namespace tinylm::cli {

void register_tokenize(CLI::App& app) {
  struct Flags {
    std::string tokenizer, text;
    bool decode = false, allow_special = false;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "tokenize", "Text to token ids (byte-level BPE), or ids to text with --decode");
  cmd->add_option("--tokenizer", f->tokenizer,
                  "tokenizer.json or a directory with tokenizer files (default: data/gpt2)");
  cmd->add_option("text", f->text,
                  "Text to encode, or ids separated by spaces or commas with --decode")
      ->required();
  cmd->add_flag("--decode", f->decode, "Decode ids to text");
  cmd->add_flag("--allow-special", f->allow_special, "Recognize <|endoftext|> in the text");
  cmd->callback([f] {
    const BpeTokenizer tok = load_tokenizer(f->tokenizer, "");
    if (f->decode) {
      std::string s = f->text;
      for (char& c : s) c = c == ',' ? ' ' : c;
      std::istringstream in(s);
      std::vector<int> ids;
      std::string word;
      while (in >> word) {
        char* end = nullptr;
        const long v = std::strtol(word.c_str(), &end, 10);
        check(*end == '\0' && v >= 0 && v < tok.vocab_size(), "--decode: '", word,
              "' is not a token id");
        ids.push_back(static_cast<int>(v));
      }
      const std::string text = tok.decode(ids);
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fputs("\n", stdout);
      return;
    }
    const std::vector<int> ids = tok.encode(f->text, f->allow_special);
    for (size_t i = 0; i < ids.size(); ++i) std::printf(i ? " %d" : "%d", ids[i]);
    std::printf("\n");
  });
}

}  // namespace tinylm::cli
