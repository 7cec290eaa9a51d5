// tinylm tokenize: text to GPT-2 token ids, or ids back to text with --decode; --grid RxC
// makes train-gpt2's token grid.
#include <cstdio>
#include <sstream>

#include "cli_util.h"
#include "commands.h"
#include "model_kind.h"
#include "tinylm/core/error.h"
#include "tinylm/families/gpt2.h"

namespace tinylm::cli {
namespace {

// The tokenizer --tokenizer names, else --model's (as generate would load it), else GPT-2's.
template <class Flags>
BpeTokenizer model_tokenizer(const Flags& f) {
  if (f.model.empty()) return families::load_gpt2_tokenizer(f.tokenizer);
  const DetectedModel d =
      resolve_model("tokenize", f.model, "", families::those(families::decodes));
  return d.family->load_tokenizer(f.tokenizer, d);
}

}  // namespace

void register_tokenize(CLI::App& app) {
  struct Flags {
    std::string tokenizer, model, text, file, grid;
    bool decode = false, allow_special = false;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "tokenize", "Text to token ids (byte-level BPE), or ids to text with --decode");
  cmd->add_option(
      "--tokenizer", f->tokenizer,
      "tokenizer.json, a directory with tokenizer files, or a .gguf (default: --model's, else "
      "data/gpt2)");
  cmd->add_option("-m,--model", f->model,
                  "A model (directory, weights file, .gguf, .evl, run directory or "
                  "hf:ORG/NAME[@REV]): its tokenizer");
  CLI::Option* text_opt = cmd->add_option(
      "text", f->text,
      "Text to encode, or ids separated by spaces or commas with --decode (default: --file, "
      "else stdin)");
  cmd->add_option("--file", f->file, "Read the text (or ids) from this file (- : stdin)");
  cmd->add_option("--grid", f->grid,
                  "RxC: the first R*C tokens as JSON {\"ids\": [[C ids] x R]}; 4x65 is "
                  "train-gpt2's --tokens");
  cmd->add_flag("--decode", f->decode, "Decode ids to text");
  cmd->add_flag("--allow-special", f->allow_special, "Recognize <|endoftext|> in the text");
  cmd->callback([f, text_opt] {
    if (text_opt->count() > 0 && !f->file.empty())
      throw UsageError("give the text or --file, not both");
    int rows = 0, cols = 0;
    if (!f->grid.empty()) {
      char x = 0, extra = 0;
      if (f->decode || std::sscanf(f->grid.c_str(), "%d%c%d%c", &rows, &x, &cols, &extra) != 3 ||
          x != 'x' || rows < 1 || cols < 1) {
        throw UsageError("--grid " + f->grid +
                         ": expected ROWSxCOLS, e.g. 4x65 (not with --decode)");
      }
    }
    if (text_opt->count() == 0 && f->file.empty() && !stdin_is_piped()) {
      throw UsageError("no text: give it as an argument, with --file FILE, or pipe it in");
    }
    const std::string text =
        text_opt->count() > 0 ? f->text
                              : read_text_input(f->file.empty() ? "-" : resolve_data_path(f->file));
    if (text.empty() && text_opt->count() == 0 && f->file.empty()) {
      throw UsageError("no text on stdin: give it as an argument, with --file FILE, or pipe it in");
    }
    const BpeTokenizer tok = model_tokenizer(*f);
    if (f->decode) {
      std::string s = text;
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
      const std::string decoded = tok.decode(ids);
      std::fwrite(decoded.data(), 1, decoded.size(), stdout);
      std::fputs("\n", stdout);
      return;
    }
    // On a terminal, bytes encoded so far (the encoder reports every MB; the text is encoded
    // whole, so the tokens are those of a run without progress).
    TerminalProgress progress("tokenize", "MB", 1e6);
    const std::vector<int> ids =
        tok.encode(text, f->allow_special, [&progress](size_t done, size_t total) {
          progress.update(static_cast<int64_t>(done), static_cast<int64_t>(total));
        });
    progress.finish();
    if (rows > 0) {
      const int64_t need = static_cast<int64_t>(rows) * cols;
      check(static_cast<int64_t>(ids.size()) >= need, "--grid ", f->grid, ": the text has ",
            ids.size(), " tokens, the grid needs ", need);
      std::string out = "{\"ids\": [";
      for (int r = 0; r < rows; ++r) {
        out += r ? ",\n  [" : "\n  [";
        for (int c = 0; c < cols; ++c) {
          out += (c ? ", " : "") + std::to_string(ids[static_cast<size_t>(r) * cols + c]);
        }
        out += "]";
      }
      out += "\n]}\n";
      std::fputs(out.c_str(), stdout);
      std::fprintf(stderr, "%d x %d grid from the first %lld of %zu tokens\n", rows, cols,
                   static_cast<long long>(need), ids.size());
      return;
    }
    for (size_t i = 0; i < ids.size(); ++i) std::printf(i ? " %d" : "%d", ids[i]);
    std::printf("\n");
  });
}

}  // namespace tinylm::cli
