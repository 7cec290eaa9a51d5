// tinylm convert: GPT-2 between a Hugging Face directory and GGUF (llama.cpp's file), either way,
// and GGUF to GGUF of another type.
#include <cstdio>
#include <filesystem>

#include "cli_util.h"
#include "commands.h"
#include "model_kind.h"
#include "tinylm/checkpoints/gpt2_checkpoint.h"
#include "tinylm/checkpoints/gpt2_gguf.h"
#include "tinylm/checkpoints/sniff.h"
#include "tinylm/core/timer.h"
#include "tinylm/families/gpt2.h"
#include "tinylm/io/atomic_file.h"
#include "tinylm/io/staged_dir.h"

namespace tinylm::cli {

namespace {

io::GgmlType ggml_type_of(const std::string& dtype) {
  if (dtype == "f16") return io::GgmlType::f16;
  if (dtype == "q8_0") return io::GgmlType::q8_0;
  if (dtype == "q4_0") return io::GgmlType::q4_0;
  return io::GgmlType::f32;
}

}  // namespace

void register_convert(CLI::App& app) {
  struct Flags {
    std::string in, out, dtype, tokenizer, config, name;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "convert",
      "Convert a GPT-2 between a Hugging Face directory and GGUF (llama.cpp), either way");
  cmd->add_option(
         "in", f->in,
         "A model directory (config.json + model.safetensors) or a .gguf, or hf:ORG/NAME[@REV]")
      ->required();
  cmd->add_option("out", f->out,
                  "The .gguf to write (from a directory or a .gguf), or the directory to write "
                  "(config.json, model.safetensors, tokenizer.json) from a .gguf")
      ->required();
  cmd->add_option("--dtype", f->dtype,
                  "GGUF weights: f32, f16, q8_0 or q4_0 (default f32; norms, biases and "
                  "position_embd stay f32). A directory is always written f32")
      ->check(CLI::IsMember({"f32", "f16", "q8_0", "q4_0"}));
  cmd->add_option("--tokenizer", f->tokenizer,
                  "Tokenizer for a directory's GGUF (default: the directory's, else data/gpt2)");
  cmd->add_option("--config", f->config, "config.json, when not beside the weights");
  cmd->add_option("--name", f->name, "general.name of the GGUF (default: none)");
  cmd->callback([f] {
    Timer timer;
    f->in = local_model_path(f->in);  // hf:ORG/NAME: the cached (or downloaded) model
    const bool from_gguf = checkpoints::sniff(f->in).format == checkpoints::Format::gguf;
    const bool to_gguf = !from_gguf || f->out.ends_with(".gguf");
    if (!to_gguf && !f->dtype.empty() && f->dtype != "f32")
      throw UsageError("--dtype " + f->dtype +
                       " is for a GGUF output; a model directory is written f32");
    if (from_gguf && !f->config.empty()) throw UsageError("--config is for a directory input");
    if (to_gguf) io::probe_output(f->out);  // before the model is read
    std::string where;
    if (from_gguf) {
      const checkpoints::Gpt2Gguf g = checkpoints::load_gpt2_gguf(f->in);
      const BpeTokenizer tok = f->tokenizer.empty() ? checkpoints::load_gguf_tokenizer(f->in)
                                                    : families::load_gpt2_tokenizer(f->tokenizer);
      const checkpoints::Gpt2Checkpoint& ck = g.checkpoint;
      if (to_gguf) {
        // GGUF to GGUF: the weights as loaded (dequantized), written in the type asked for.
        const io::GgmlType type = f->dtype.empty() ? g.weight_type : ggml_type_of(f->dtype);
        checkpoints::save_gpt2_gguf(f->out, ck.config, ck.params, ck.lm_head, tok, type, f->name);
        where = std::string("GGUF ") + io::ggml_type_name(static_cast<uint32_t>(type));
      } else {
        const std::vector<std::string> files = {"config.json", "model.safetensors",
                                                "tokenizer.json"};
        io::check_staged_target(f->out, files, checkpoints::gpt2_saved_bytes(ck.config));
        io::StagedDir out(f->out, files);
        checkpoints::save_gpt2(out.path(), ck.config, ck.params, ck.lm_head);
        tok.save_tokenizer_json(out.file("tokenizer.json"));
        out.commit();
        where = "a model directory (f32)";
      }
    } else {
      const DetectedModel d =
          resolve_model("convert", f->in, "", families::those(families::converts));
      const checkpoints::Gpt2Checkpoint ck = checkpoints::load_gpt2(d.path, f->config);
      const BpeTokenizer tok = families::load_gpt2_tokenizer(f->tokenizer, d);
      if (tok.vocab_size() > ck.config.vocab_size)
        throw UsageError("the tokenizer has " + std::to_string(tok.vocab_size()) +
                         " tokens, more than the model's " + std::to_string(ck.config.vocab_size) +
                         ": pass its own with --tokenizer");
      const io::GgmlType type = ggml_type_of(f->dtype);
      checkpoints::save_gpt2_gguf(f->out, ck.config, ck.params, ck.lm_head, tok, type, f->name);
      where = std::string("GGUF ") + io::ggml_type_name(static_cast<uint32_t>(type));
    }
    std::fprintf(to_gguf ? report_stream(f->out) : stdout, "wrote %s: %s\n", f->out.c_str(),
                 where.c_str());
    std::fprintf(stderr, "convert %.0f ms\n", timer.elapsed_ms());
  });
}

}  // namespace tinylm::cli
