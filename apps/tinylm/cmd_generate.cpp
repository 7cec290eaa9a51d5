// tinylm generate: text from a GPT-2, EvermindLM or microgpt model (the family table's decoding
// families), streamed as it is produced.
#include <cstdio>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "cli_util.h"
#include "commands.h"
#include "model_kind.h"
#include "standard_streams.h"
#include "tinylm/core/error.h"
#include "tinylm/generate/generate.h"
#include "tinylm/generate/stop_text.h"

namespace tinylm::cli {

namespace {

struct GenerateFlags {
  std::string arch;
  ModelFlags model;
  std::string prompt, prompt_file, prompts_file;
  std::vector<std::string> stops;  // --stop: the text ends before the first
  int samples = 1;
  generate::GenerateOptions gen;
  bool allow_special = false;
  bool sample = false;  // nanoGPT's sample.py: temperature 0.8, top-k 200
  CLI::Option* temperature = nullptr;
  CLI::Option* top_k = nullptr;
};

// The loaded model of any family behind the decode interface, with its tokenizer.
struct Generator {
  const families::Family* family = nullptr;
  std::optional<BpeTokenizer> tok;
  families::DecodeModel model;
  int context = 0;  // the model's positions (0: no limit)

  std::vector<int> encode(const GenerateFlags& f, const std::string& text) const {
    std::vector<int> ids = tok->encode(text, f.allow_special || family->prompt_allows_special);
    if (family->documents_start_with_eot) ids.insert(ids.begin(), eot_of(*tok, f.model.model));
    if (ids.empty()) throw UsageError("the prompt is empty");  // EvermindLM too (issue 17)
    if (family->context_without_end > 0 && f.gen.max_tokens > generate::kMaxNewTokens) {
      throw UsageError(cat("--max-tokens ", f.gen.max_tokens, ": ", family->title,
                           " generates at most ", generate::kMaxNewTokens, " tokens"));
    }
    if (context > 0 && static_cast<int64_t>(ids.size()) > context) {
      fail("the prompt has ", ids.size(), " tokens, more than the model's context of ", context);
    }
    return ids;
  }

  // Generates after `prompt` (checked by encode), passing the new text to `sink` as it
  // becomes complete UTF-8; on_token(n) after each new token, n of them so far.
  generate::GeneratedText run(const GenerateFlags& f, const std::vector<int>& prompt, uint64_t seed,
                              const std::function<void(std::string_view)>& sink,
                              const std::function<void(int64_t)>& on_token) {
    generate::GenerateOptions g = f.gen;
    g.sampling.seed = seed;
    g.eos_id = tok->eot_id().value_or(-1);
    int64_t made = 0;
    // The text passes through the stop sequences: what may begin one is held back, and the
    // first complete one ends the generation, itself not printed.
    generate::StopText stop(f.stops);
    std::string text;
    const auto emit = [&](const std::string& piece) {
      text += piece;
      if (sink && !piece.empty()) sink(piece);
    };
    generate::GeneratedText st = generate::generate_text(
        *model.backend, *tok, prompt, g, [&](std::string_view piece) { emit(stop.push(piece)); },
        [&](int) {
          on_token(++made);
          return !stop.stopped();
        });
    emit(stop.finish());
    st.text = std::move(text);
    return st;
  }
};

// The tokenizer first: the prompts are checked before the (slow, chatty) weights load.
Generator load_tokenizer_of(const GenerateFlags& f, const DetectedModel& file) {
  check_load_flags(f.model, file, "generates");
  Generator g;
  g.family = file.family;
  g.tok.emplace(load_model_tokenizer(f.model, file));
  return g;
}

void load_weights(Generator& g, const GenerateFlags& f, const DetectedModel& file) {
  g.model = load_decoder(f.model, file);
  const int positions = g.model.backend->context_limit();
  if (positions > 0 && f.gen.context > positions)
    throw UsageError(
        cat("--ctx-size ", f.gen.context, " is more than the model's context of ", positions));
  g.context = f.gen.context_for(positions);
}

// The prompts: --prompts FILE (one a line), else --prompt, --prompt-file, or stdin. None on a
// terminal: for a family whose documents start after end-of-text, that token alone (microgpt's
// names); with --sample, a newline (sample.py's start, as training's samples begin).
std::vector<std::string> read_prompts(const GenerateFlags& f, const families::Family& family) {
  const int given = !f.prompt.empty() + !f.prompt_file.empty() + !f.prompts_file.empty();
  if (given > 1) throw UsageError("give one of --prompt, --prompt-file and --prompts");
  if (!f.prompts_file.empty()) {
    std::vector<std::string> prompts;
    std::istringstream in(read_text_input(f.prompts_file));
    for (std::string line; std::getline(in, line);) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!line.empty()) prompts.push_back(line);
    }
    check(!prompts.empty(), f.prompts_file, ": no prompts (one per line)");
    return prompts;
  }
  if (!f.prompt.empty()) return {f.prompt};
  if (!f.prompt_file.empty()) return {read_text_input(f.prompt_file)};
  if (!stdin_is_piped()) {
    if (family.documents_start_with_eot) return {""};
    if (f.sample) return {"\n"};
    throw UsageError(
        "no prompt: give --prompt TEXT, --prompt-file FILE or --prompts FILE, or pipe it in");
  }
  return {read_text_input("-")};
}

void run_generate(GenerateFlags& f) {
  // Every check that can fail comes before the first byte on stdout.
  if (f.gen.max_tokens < 0) throw UsageError("--max-tokens must be >= 0");
  if (f.samples < 1) throw UsageError("--samples must be >= 1");
  try {
    f.gen.sampling.validate();
    f.gen.penalties.validate(std::numeric_limits<int>::max());
  } catch (const Error& e) {
    throw UsageError(e.what());  // flags out of range
  }
  for (const std::string& s : f.stops)
    if (s.empty()) throw UsageError("--stop: an empty string would stop before any text");
  const DetectedModel d =
      resolve_model("generate", f.model.model, f.arch, families::those(families::decodes));
  // The family's sampling when none is asked for.
  // --sample: nanoGPT's sample.py settings; else the family's defaults (GPT-2's: greedy).
  // --temperature and --top-k given win either way.
  if (f.sample) f.gen.slide = true;
  const double temperature = f.sample ? 0.8 : d.family->temperature;
  const int top_k = f.sample ? 200 : d.family->top_k;
  if (f.temperature->count() == 0) f.gen.sampling.temperature = temperature;
  if (f.top_k->count() == 0 && (f.sample || f.temperature->count() == 0))
    f.gen.sampling.top_k = top_k;
  const std::vector<std::string> prompts = read_prompts(f, *d.family);
  Generator g = load_tokenizer_of(f, d);
  std::vector<std::vector<int>> ids;
  for (const std::string& p : prompts) ids.push_back(g.encode(f, p));
  load_weights(g, f, d);
  check_tokenizer_fits(*g.tok, g.model.backend->vocab_size(), f.model, d);
  for (const std::vector<int>& v : ids) {  // now against the model's context
    check(g.context == 0 || static_cast<int64_t>(v.size()) <= g.context, "the prompt has ",
          v.size(), " tokens, more than the model's context of ", g.context);
  }

  size_t prompt_tokens = 0, new_tokens = 0;
  double prefill_ms = 0, decode_ms = 0;
  const bool json = !f.prompts_file.empty();
  const bool many = prompts.size() * f.samples > 1;
  // When the text goes to a file or a pipe, a terminal's stderr shows the tokens made out of
  // all the completions' --max-tokens (one that stops early counts as complete). On a
  // terminal the text itself shows as it comes.
  TerminalProgress progress("generate", "tokens", 1.0, !stdout_is_terminal());
  const int64_t per_completion = f.gen.max_tokens;
  const int64_t all_tokens = static_cast<int64_t>(prompts.size()) * f.samples * per_completion;
  int64_t completed = 0;
  const auto on_token = [&](int64_t made) {
    if (all_tokens > 0) progress.update(completed * per_completion + made, all_tokens);
  };
  for (size_t i = 0; i < prompts.size(); ++i) {
    for (int s = 0; s < f.samples; ++s) {
      const uint64_t seed = f.gen.sampling.seed + static_cast<uint64_t>(s);
      generate::GeneratedText st;
      if (json) {
        st = g.run(f, ids[i], seed, {}, on_token);
        nlohmann::ordered_json line = {{"prompt", prompts[i]},
                                       {"sample", s},
                                       {"seed", seed},
                                       {"text", st.text},
                                       {"tokens", st.generated()}};
        const std::string dumped =
            line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        std::printf("%s\n", dumped.c_str());
        flush_stdout();
      } else {
        // Between completions, nanoGPT's sample.py separator: a blank line would not stand
        // out in text that has its own (a play's speeches).
        if (many && s > 0) std::fputs("---------------\n", stdout);
        std::fputs(prompts[i].c_str(), stdout);
        flush_stdout();
        st = g.run(
            f, ids[i], seed,
            [](std::string_view piece) {
              std::fwrite(piece.data(), 1, piece.size(), stdout);
              flush_stdout();
            },
            on_token);
        std::fputs("\n", stdout);
        flush_stdout();
      }
      prompt_tokens += ids[i].size();
      new_tokens += st.generated();
      prefill_ms += st.prefill_ms;
      decode_ms += st.decode_ms;
      if (st.hit_context_end) {
        progress.finish();
        std::fprintf(stderr, "stopped: reached the model's context of %d positions\n", g.context);
      }
      ++completed;
      on_token(0);
    }
  }
  progress.finish();
  // The first new token comes from the prefill's logits: decode made the rest.
  const double steps = new_tokens > 1 ? static_cast<double>(new_tokens - 1) : 1.0;
  std::fprintf(
      stderr, "prompt %zu tokens: prefill %.1f ms (%.0f tok/s); %zu tokens: decode %.1f tok/s\n",
      prompt_tokens, prefill_ms, prefill_ms > 0 ? prompt_tokens * 1000.0 / prefill_ms : 0.0,
      new_tokens, decode_ms > 0 ? steps * 1000.0 / decode_ms : 0.0);
}

// The families' sampling defaults, for --temperature's and --top-k's help: "0 for GPT-2, 0.8
// for EvermindLM"; "EvermindLM default 40".
std::string temperature_defaults() {
  std::string text;
  for (const families::Family* fam : families::those(families::decodes))
    text += cat(text.empty() ? "" : ", ", fam->temperature, " for ", fam->title);
  return text;
}

std::string top_k_defaults() {
  std::string text;
  for (const families::Family* fam : families::those(families::decodes))
    if (fam->top_k > 0) text += cat("; ", fam->title, " default ", fam->top_k);
  return text;
}

}  // namespace

void register_generate(CLI::App& app) {
  auto f = std::make_shared<GenerateFlags>();
  CLI::App* cmd = app.add_subcommand(
      "generate", "Generate text with a GPT-2 (KV cache), EvermindLM or microgpt model, streaming");
  add_arch_option(cmd, f->arch, families::those(families::decodes));
  f->model.add_to(cmd);
  cmd->add_option("-p,--prompt", f->prompt, "Prompt text (or --prompt-file, --prompts, stdin)");
  cmd->add_option("-f,--prompt-file", f->prompt_file, "Read the prompt from this file (- : stdin)");
  cmd->add_option("--prompts", f->prompts_file,
                  "One prompt per line; prints one JSON line per completion");
  cmd->add_option("--samples", f->samples,
                  "Completions per prompt (seeds seed, seed+1, ...), separated by a line of dashes")
      ->capture_default_str();
  cmd->add_option("-n,--max-tokens,--n-predict", f->gen.max_tokens, "Tokens to generate")
      ->capture_default_str();
  f->temperature = cmd->add_option("--temperature,--temp", f->gen.sampling.temperature,
                                   "0: greedy (default " + temperature_defaults() + ")");
  f->top_k = cmd->add_option("--top-k", f->gen.sampling.top_k,
                             "Sample from the k most likely (0: all" + top_k_defaults() + ")");
  cmd->add_option("--top-p", f->gen.sampling.top_p, "Nucleus sampling mass (1: off)")
      ->capture_default_str();
  cmd->add_flag("--sample", f->sample,
                "Sample as nanoGPT's sample.py does: temperature 0.8, top-k 200 (--temperature "
                "and --top-k given win), --slide, and from a newline when no prompt is given");
  cmd->add_flag("--slide", f->gen.slide,
                "Past the model's context, each new token sees the last context's worth of tokens "
                "(fed again: nanoGPT's sample.py); otherwise the context's end stops");
  cmd->add_option("-c,--ctx-size", f->gen.context,
                  "Positions the prompt and the generation may fill (default: the model's)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("-s,--seed", f->gen.sampling.seed, "Sampling seed")->capture_default_str();
  cmd->add_option("--repeat-penalty", f->gen.penalties.repetition,
                  "Divide the logit of every token already in the prompt or the text by this "
                  "(Hugging Face's repetition_penalty; no window; 1: off)")
      ->capture_default_str();
  cmd->add_option("--frequency-penalty", f->gen.penalties.frequency,
                  "Subtract this times the times a token was generated (OpenAI's; -2..2)")
      ->capture_default_str();
  cmd->add_option("--presence-penalty", f->gen.penalties.presence,
                  "Subtract this from every token generated so far (OpenAI's; -2..2)")
      ->capture_default_str();
  cmd->add_option("--stop", f->stops,
                  "End the text before this string (repeatable; the string is not printed)")
      ->allow_extra_args(false);
  cmd->add_flag("--ignore-eos", f->gen.ignore_eos, "Do not stop at <|endoftext|>");
  cmd->add_flag("--allow-special", f->allow_special, "Recognize <|endoftext|> in the prompt");
  cmd->callback([f] { run_generate(*f); });
}

}  // namespace tinylm::cli
