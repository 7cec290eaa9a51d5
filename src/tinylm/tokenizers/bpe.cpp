#include "tinylm/tokenizers/bpe.h"

#include <algorithm>
#include <array>
#include <climits>
#include <filesystem>
#include <limits>
#include <unordered_map>
#include <utility>

#include "tinylm/core/error.h"
#include "tinylm/core/utf8.h"
#include "tinylm/io/atomic_file.h"
#include "tinylm/io/json_strict.h"
#include "tinylm/io/text_file.h"
#include "tinylm/tokenizers/bpe_model.h"
#include "tinylm/tokenizers/pretokenize.h"

namespace tinylm {

namespace {

using Json = nlohmann::ordered_json;
using bpe_detail::pair_key;
using bpe_detail::quote_token;

// ---------------------------------------------------------------------------------------------
// Byte-level alphabet

struct ByteMap {
  std::array<char32_t, 256> to_unicode{};
  std::array<int16_t, 0x144> to_byte{};  // every alphabet character is below U+0144
};

constexpr ByteMap kByteMap = [] {
  ByteMap m{};
  for (int16_t& b : m.to_byte) b = -1;
  int next = 0;
  for (int b = 0; b < 256; ++b) {
    const bool same = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    const char32_t c = same ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + next++);
    m.to_unicode[b] = c;
    m.to_byte[c] = static_cast<int16_t>(b);
  }
  return m;
}();

// ---------------------------------------------------------------------------------------------
// UTF-8 repair (WHATWG "UTF-8 decode")

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Appends to out the UTF-8 of in's bytes, each maximal invalid subpart replaced by U+FFFD.
// When the input ends inside a sequence that could still be completed, flush replaces it by
// U+FFFD too; without flush, decoding stops before it. Returns the bytes consumed.
size_t decode_whatwg(std::string_view in, std::string& out, bool flush) {
  const size_t n = in.size();
  size_t i = 0;
  while (i < n) {
    const auto b = static_cast<unsigned char>(in[i]);
    if (b < 0x80) {
      out += static_cast<char>(b);
      ++i;
      continue;
    }
    int need = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) {
      need = 1;
    } else if (b >= 0xE0 && b <= 0xEF) {
      need = 2;
      if (b == 0xE0) lo = 0xA0;  // no overlongs
      if (b == 0xED) hi = 0x9F;  // no surrogates
    } else if (b >= 0xF0 && b <= 0xF4) {
      need = 3;
      if (b == 0xF0) lo = 0x90;  // no overlongs
      if (b == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
    } else {
      out += kReplacement;  // 80-C1, F5-FF can start nothing
      ++i;
      continue;
    }
    size_t j = i + 1;
    int seen = 0;
    while (seen < need && j < n) {
      const auto c = static_cast<unsigned char>(in[j]);
      if (c < lo || c > hi) break;
      lo = 0x80;
      hi = 0xBF;
      ++seen;
      ++j;
    }
    if (seen == need) {
      out.append(in.substr(i, j - i));
    } else if (j == n && !flush) {
      return i;  // incomplete, may yet be completed
    } else {
      out += kReplacement;  // [i, j) is a maximal invalid subpart; in[j] starts afresh
    }
    i = j;
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// Helpers

// The bytes of a byte-level string, or nullopt when a character is outside the alphabet.
std::optional<std::string> byte_level_bytes(std::string_view token) {
  std::string out;
  for (size_t i = 0; i < token.size();) {
    int len = 0;
    const int b = unicode_to_byte(utf8_at(token, i, &len));
    if (b < 0) return std::nullopt;
    out += static_cast<char>(b);
    i += static_cast<size_t>(len);
  }
  return out;
}

// A JSON id: an integer in [0, INT_MAX].
int json_id(const Json& v, const std::string& what, std::string_view token) {
  if (!v.is_number_integer())
    fail(what, ": the id of token ", quote_token(token), " is not an integer: ", v.dump());
  const bool ok = v.is_number_unsigned() ? v.get<uint64_t>() <= INT_MAX
                                         : v.get<int64_t>() >= 0 && v.get<int64_t>() <= INT_MAX;
  if (!ok) fail(what, ": the id of token ", quote_token(token), " is out of range: ", v.dump());
  return static_cast<int>(v.get<int64_t>());
}

struct VocabEntry {
  std::string token;
  int id;
};

struct AddedToken {
  std::string content;
  int id;
  bool special;
};

struct MergeEntry {
  std::string a, b;
  size_t where;  // line number (merges text) or index (tokenizer.json)
};

std::vector<VocabEntry> parse_vocab(const Json& v, const std::string& what) {
  check(v.is_object(), what, ": the vocabulary is not a JSON object (token -> id)");
  std::vector<VocabEntry> out;
  out.reserve(v.size());
  for (const auto& [token, id] : v.items()) out.push_back({token, json_id(id, what, token)});
  return out;
}

// "a b" with exactly one space and two non-empty parts.
bool split_merge(std::string_view s, MergeEntry& m) {
  const size_t sp = s.find(' ');
  if (sp == std::string_view::npos || sp == 0 || sp + 1 == s.size() ||
      s.find(' ', sp + 1) != std::string_view::npos) {
    return false;
  }
  m.a = std::string(s.substr(0, sp));
  m.b = std::string(s.substr(sp + 1));
  return true;
}

std::vector<MergeEntry> parse_merges_text(std::string_view text, const std::string& what) {
  size_t bad = 0;
  check(is_valid_utf8(text, &bad), what, ": invalid UTF-8 at byte ", bad);
  std::vector<std::string_view> lines;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    pos = end + 1;
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  std::vector<MergeEntry> out;
  out.reserve(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i == 0 && lines[i].starts_with("#version")) continue;
    MergeEntry m;
    check(!lines[i].empty(), what, ": line ", i + 1, ": blank line among the merges");
    if (!split_merge(lines[i], m))
      fail(what, ": line ", i + 1, ": expected two tokens separated by one space, got ",
           quote_token(lines[i]));
    m.where = i + 1;
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Public helpers

char32_t byte_to_unicode(uint8_t b) { return kByteMap.to_unicode[b]; }

int unicode_to_byte(char32_t c) { return c < kByteMap.to_byte.size() ? kByteMap.to_byte[c] : -1; }

std::string sanitize_utf8(std::string_view bytes) {
  if (is_valid_utf8(bytes, nullptr)) return std::string(bytes);
  std::string out;
  out.reserve(bytes.size() + 16);
  decode_whatwg(bytes, out, /*flush=*/true);
  return out;
}

namespace {

using bpe_detail::Model;

constexpr std::string_view kEndOfText = "<|endoftext|>";

std::shared_ptr<const Model> build_model(const std::vector<VocabEntry>& vocab,
                                         const std::vector<AddedToken>& added,
                                         const std::vector<MergeEntry>& merges,
                                         const std::string& vocab_what,
                                         const std::string& merges_what, const char* where_word) {
  auto m = std::make_shared<Model>();
  // Token -> id, the added tokens included (they must agree with the vocabulary).
  m->ids.reserve(vocab.size() + added.size());
  for (const VocabEntry& e : vocab) {
    check(!e.token.empty(), vocab_what, ": empty token (id ", e.id, ")");
    // (tokenizer.json's parser refuses a repeated key first; a GGUF's token list meets this.)
    if (const int had = m->ids.emplace(e.token, e.id); had != e.id)
      fail(vocab_what, ": token ", quote_token(e.token), " has the ids ", had, " and ", e.id);
  }
  for (const AddedToken& a : added) {
    check(!a.content.empty(), vocab_what, ": added token with empty content (id ", a.id, ")");
    const int had = m->ids.emplace(a.content, a.id);
    if (had != a.id)
      fail(vocab_what, ": added token ", quote_token(a.content), " has id ", a.id,
           " but the vocabulary gives it id ", had);
  }
  // Ids: 0..N-1, each once (checked in file order, so errors name the first offender).
  const size_t n = m->ids.size();
  check(n > 0, vocab_what, ": the vocabulary is empty");
  m->tokens.resize(n);
  std::vector<bool> seen(n, false);
  const auto place = [&](const std::string& token, int id) {
    if (static_cast<size_t>(id) >= n)
      fail(vocab_what, ": the id ", id, " of token ", quote_token(token), " is out of range: the ",
           n, " tokens must have the ids 0..", n - 1);
    if (seen[id])
      fail(vocab_what, ": tokens ", quote_token(m->tokens[id]), " and ", quote_token(token),
           " have the same id ", id);
    seen[id] = true;
    m->tokens[id] = token;
  };
  for (const VocabEntry& e : vocab) place(e.token, e.id);
  for (const AddedToken& a : added) {
    const bool placed = static_cast<size_t>(a.id) < n && seen[a.id] && m->tokens[a.id] == a.content;
    if (!placed) place(a.content, a.id);
  }
  // Special tokens: the added tokens marked special, and <|endoftext|>.
  for (const AddedToken& a : added) {
    if (a.special) m->specials.emplace_back(a.content, a.id);
  }
  if (const int eot = m->ids.find(kEndOfText); eot >= 0) {
    m->eot = eot;
    m->specials.emplace_back(std::string(kEndOfText), eot);
  }
  std::sort(m->specials.begin(), m->specials.end(),
            [](const auto& x, const auto& y) { return x.second < y.second; });
  m->specials.erase(std::unique(m->specials.begin(), m->specials.end()), m->specials.end());
  // Decoded bytes, as Hugging Face's ByteLevel decoder has them: through the byte-level
  // alphabet when all the token's characters are in it (<|endoftext|> is its own bytes), else
  // the token as written (e.g. an added token with a space).
  m->bytes.resize(n);
  for (size_t id = 0; id < n; ++id) {
    std::optional<std::string> b = byte_level_bytes(m->tokens[id]);
    m->bytes[id] = b ? std::move(*b) : m->tokens[id];
  }
  for (int b = 0; b < 256; ++b) {
    std::string ch;
    append_utf8(ch, byte_to_unicode(static_cast<uint8_t>(b)));
    m->byte_ids[b] = m->ids.find(ch);
  }
  m->whole_characters = std::find(m->byte_ids.begin(), m->byte_ids.end(), -1) != m->byte_ids.end();
  for (size_t id = 0; id < n && m->whole_characters; ++id) {
    const bool special = std::any_of(m->specials.begin(), m->specials.end(), [&](const auto& sp) {
      return sp.second == static_cast<int>(id);
    });
    m->whole_characters = special || code_points(m->bytes[id]) <= 1;
  }
  // Merges, ranked in order (none: every token a byte or an added token, a byte vocabulary).
  m->merges.reserve(merges.size());
  m->merge_table.reserve(merges.size());
  for (const MergeEntry& e : merges) {
    const auto id_of = [&](const std::string& t) {
      const int id = m->ids.find(t);
      if (id < 0)
        fail(merges_what, ": ", where_word, " ", e.where, ": merge ", quote_token(e.a + " " + e.b),
             ": ", quote_token(t), " is not in the vocabulary");
      return id;
    };
    const int a = id_of(e.a), b = id_of(e.b), result = id_of(e.a + e.b);
    const int rank = static_cast<int>(m->merges.size());
    const auto [had, inserted] = m->merge_table.emplace(pair_key(a, b), {rank, result});
    if (!inserted)
      fail(merges_what, ": ", where_word, " ", e.where, ": merge ", quote_token(e.a + " " + e.b),
           " repeats merge ", had->rank, " (counting from 0)");
    m->merges.emplace_back(a, b);
  }
  return m;
}

// ---------------------------------------------------------------------------------------------
// tokenizer.json

// Refuses the settings whose effect tinylm does not implement.
void check_supported(const Json& root, const Json& model, const std::string& what) {
  const auto get = [](const Json& obj, const char* key) -> const Json* {
    const auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
  };
  if (const Json* v = get(model, "type")) {
    check(*v == "BPE", what, ": model type ", v->dump(), " is not \"BPE\"");
  }
  if (const Json* v = get(model, "dropout")) {
    check(v->is_number() && v->get<double>() == 0.0, what, ": BPE dropout ", v->dump(),
          " is not supported");
  }
  for (const char* key : {"byte_fallback", "ignore_merges"}) {
    if (const Json* v = get(model, key)) {
      check(*v == false, what, ": model.", key, " = ", v->dump(), " is not supported");
    }
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (const Json* v = get(model, key)) {
      check(*v == "", what, ": model.", key, " = ", v->dump(), " is not supported");
    }
  }
  if (const Json* v = get(root, "normalizer")) {
    fail(what, ": a normalizer is not supported: ", v->dump().substr(0, 200));
  }
  if (const Json* v = get(root, "pre_tokenizer")) {
    const bool ok = v->is_object() && v->value("type", Json()) == "ByteLevel" &&
                    v->value("add_prefix_space", Json(false)) == false &&
                    v->value("use_regex", Json(true)) == true;
    check(ok, what, ": only the pre_tokenizer ByteLevel (GPT-2's split, no prefix space) is ",
          "supported, not ", v->dump().substr(0, 200));
  }
}

std::vector<AddedToken> parse_added_tokens(const Json& root, const std::string& what) {
  std::vector<AddedToken> out;
  const auto it = root.find("added_tokens");
  if (it == root.end() || it->is_null()) return out;
  check(it->is_array(), what, ": added_tokens is not an array");
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& t = (*it)[i];
    check(t.is_object() && t.contains("id") && t.contains("content") && t["content"].is_string(),
          what, ": added_tokens[", i, "] is not an object with an id and a content string");
    const std::string& content = t["content"].get_ref<const std::string&>();
    const Json special = t.value("special", Json(false));
    check(special.is_boolean(), what, ": added_tokens[", i, "].special is not a boolean");
    out.push_back({content, json_id(t["id"], what, content), special.get<bool>()});
  }
  return out;
}

std::vector<MergeEntry> parse_json_merges(const Json& merges, const std::string& what) {
  check(merges.is_array(), what, ": model.merges is not an array");
  std::vector<MergeEntry> out;
  out.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    const Json& e = merges[i];
    MergeEntry m;
    m.where = i;
    if (e.is_string()) {
      if (!split_merge(e.get_ref<const std::string&>(), m))
        fail(what, ": model.merges[", i,
             "]: expected \"a b\" (two tokens separated by one space), got ", e.dump());
    } else {
      if (!(e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string() &&
            !e[0].get_ref<const std::string&>().empty() &&
            !e[1].get_ref<const std::string&>().empty()))
        fail(what, ": model.merges[", i, "]: expected \"a b\" or [\"a\", \"b\"], got ",
             e.dump().substr(0, 200));
      m.a = e[0].get<std::string>();
      m.b = e[1].get<std::string>();
    }
    out.push_back(std::move(m));
  }
  return out;
}

// Writes s as a JSON string.
void append_json_string(std::string& out, const std::string& s) { out += Json(s).dump(); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// BpeTokenizer

BpeTokenizer::BpeTokenizer(std::shared_ptr<const bpe_detail::Model> model)
    : model_(std::move(model)), cache_(std::make_unique<bpe_detail::Cache>()) {}
BpeTokenizer::BpeTokenizer(const BpeTokenizer& other) : BpeTokenizer(other.model_) {}
BpeTokenizer& BpeTokenizer::operator=(const BpeTokenizer& other) {
  if (this != &other) {
    model_ = other.model_;
    cache_ = std::make_unique<bpe_detail::Cache>();
  }
  return *this;
}
BpeTokenizer::BpeTokenizer(BpeTokenizer&&) noexcept = default;
BpeTokenizer& BpeTokenizer::operator=(BpeTokenizer&&) noexcept = default;
BpeTokenizer::~BpeTokenizer() = default;

BpeTokenizer BpeTokenizer::from_tokenizer_json_text(std::string_view json,
                                                    const std::string& name) {
  const Json root = io::parse_json_strict(json, name);
  check(root.is_object(), name, ": not a JSON object");
  const auto model = root.find("model");
  check(model != root.end() && model->is_object(), name, ": no \"model\" object");
  check_supported(root, *model, name);
  const auto vocab = model->find("vocab");
  check(vocab != model->end(), name, ": no model.vocab");
  const auto merges = model->find("merges");
  check(merges != model->end(), name, ": no model.merges");
  return BpeTokenizer(build_model(parse_vocab(*vocab, name), parse_added_tokens(root, name),
                                  parse_json_merges(*merges, name), name, name,
                                  "model.merges index"));
}

BpeTokenizer BpeTokenizer::from_tokenizer_json(const std::string& path) {
  return from_tokenizer_json_text(io::read_file(path), path);
}

BpeTokenizer BpeTokenizer::from_vocab_and_merges_text(std::string_view vocab_json,
                                                      std::string_view merges_text,
                                                      const std::string& vocab_name,
                                                      const std::string& merges_name) {
  const Json vocab = io::parse_json_strict(vocab_json, vocab_name);
  std::vector<MergeEntry> merges = parse_merges_text(merges_text, merges_name);
  // (A merges file with none is more likely cut short than meant.)
  check(!merges.empty(), merges_name, ": no merges");
  return BpeTokenizer(
      build_model(parse_vocab(vocab, vocab_name), {}, merges, vocab_name, merges_name, "line"));
}

BpeTokenizer BpeTokenizer::from_vocab_and_merges(const std::string& vocab_path,
                                                 const std::string& merges_path) {
  return from_vocab_and_merges_text(io::read_file(vocab_path), io::read_file(merges_path),
                                    vocab_path, merges_path);
}

BpeTokenizer BpeTokenizer::from_tokens(std::span<const std::string> tokens,
                                       std::span<const std::string> merges,
                                       std::span<const int> special_ids, const std::string& name) {
  check(tokens.size() <= static_cast<size_t>(std::numeric_limits<int>::max()), name, ": ",
        tokens.size(), " tokens");
  std::vector<VocabEntry> vocab;
  vocab.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) vocab.push_back({tokens[i], static_cast<int>(i)});
  std::vector<AddedToken> added;
  for (int id : special_ids) {
    check(id >= 0 && static_cast<size_t>(id) < tokens.size(), name, ": special token id ", id,
          " is outside the ", tokens.size(), " tokens");
    added.push_back({tokens[static_cast<size_t>(id)], id, true});
  }
  std::vector<MergeEntry> parsed(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    if (!split_merge(merges[i], parsed[i]))
      fail(name, ": merge ", i, ": expected two tokens separated by one space, got ",
           quote_token(merges[i]));
    parsed[i].where = i;
  }
  return BpeTokenizer(build_model(vocab, added, parsed, name, name, "merge"));
}

BpeTokenizer BpeTokenizer::from_directory(const std::string& dir) {
  const auto path = [&](const char* name) { return (std::filesystem::path(dir) / name).string(); };
  const auto exists = [&](const char* name) {
    std::error_code ec;
    return std::filesystem::is_regular_file(path(name), ec);
  };
  if (exists("tokenizer.json")) return from_tokenizer_json(path("tokenizer.json"));
  if (exists("vocab.json") && exists("merges.txt")) {
    return from_vocab_and_merges(path("vocab.json"), path("merges.txt"));
  }
  if (exists("encoder.json") && exists("vocab.bpe")) {
    return from_vocab_and_merges(path("encoder.json"), path("vocab.bpe"));
  }
  fail(dir, ": no BPE tokenizer: expected tokenizer.json, vocab.json + merges.txt, or ",
       "encoder.json + vocab.bpe");
}

std::vector<int> BpeTokenizer::encode(std::string_view text, bool allow_special) const {
  return encode(text, allow_special, nullptr);
}

std::vector<int> BpeTokenizer::encode(std::string_view text, bool allow_special,
                                      const EncodeProgress& progress, size_t every) const {
  std::string repaired;
  if (!is_valid_utf8(text, nullptr)) {
    repaired = sanitize_utf8(text);
    text = repaired;
  }
  const Model& m = *model_;
  std::vector<int> out;
  out.reserve(text.size() / 3 + 1);
  bpe_detail::Scratch scratch;
  every = std::max<size_t>(every, 1);
  size_t next_report = every;
  const auto encode_plain = [&](std::string_view part) {
    for_each_pretoken(part, [&](std::string_view piece) {
      bpe_detail::encode_piece(m, *cache_, piece, out, scratch);
      if (!progress) return;
      const size_t done = static_cast<size_t>(piece.data() - text.data()) + piece.size();
      if (done >= next_report && done < text.size()) {
        progress(done, text.size());
        next_report = done - done % every + every;
      }
    });
  };
  if (!allow_special || m.specials.empty()) {
    encode_plain(text);
    if (progress) progress(text.size(), text.size());
    return out;
  }
  // Split off the special tokens: at each step the leftmost occurrence, the longest there.
  std::vector<size_t> next(m.specials.size(), 0);
  for (size_t k = 0; k < next.size(); ++k) next[k] = text.find(m.specials[k].first);
  size_t pos = 0;
  while (true) {
    size_t best = std::string_view::npos, best_k = 0;
    for (size_t k = 0; k < next.size(); ++k) {
      if (next[k] != std::string_view::npos && next[k] < pos) {
        next[k] = text.find(m.specials[k].first, pos);
      }
      if (next[k] < best || (next[k] == best && best != std::string_view::npos &&
                             m.specials[k].first.size() > m.specials[best_k].first.size())) {
        best = next[k];
        best_k = k;
      }
    }
    if (best == std::string_view::npos) break;
    encode_plain(text.substr(pos, best - pos));
    out.push_back(m.specials[best_k].second);
    pos = best + m.specials[best_k].first.size();
  }
  encode_plain(text.substr(pos));
  if (progress) progress(text.size(), text.size());
  return out;
}

std::string BpeTokenizer::decode(std::span<const int> ids) const {
  std::string out;
  for (int id : ids) out += token_bytes(id);
  return out;
}

int BpeTokenizer::vocab_size() const { return static_cast<int>(model_->tokens.size()); }

int BpeTokenizer::num_merges() const { return static_cast<int>(model_->merges.size()); }

std::string BpeTokenizer::merge(int rank) const {
  check(rank >= 0 && static_cast<size_t>(rank) < model_->merges.size(), "merge rank ", rank,
        " is outside the ", model_->merges.size(), " merges");
  const auto [a, b] = model_->merges[static_cast<size_t>(rank)];
  return model_->tokens[a] + " " + model_->tokens[b];
}

std::optional<int> BpeTokenizer::eot_id() const { return model_->eot; }

const std::string& BpeTokenizer::token(int id) const {
  check(id >= 0 && id < vocab_size(), "BPE: token id ", id, " is outside the vocabulary (",
        vocab_size(), " tokens)");
  return model_->tokens[static_cast<size_t>(id)];
}

std::string_view BpeTokenizer::token_bytes(int id) const {
  check(id >= 0 && id < vocab_size(), "BPE: token id ", id, " is outside the vocabulary (",
        vocab_size(), " tokens)");
  return model_->bytes[static_cast<size_t>(id)];
}

std::optional<int> BpeTokenizer::token_id(std::string_view token) const {
  const int id = model_->ids.find(token);
  if (id < 0) return std::nullopt;
  return id;
}

std::vector<int> BpeTokenizer::special_ids() const {
  std::vector<int> out;
  for (const auto& s : model_->specials) out.push_back(s.second);
  return out;
}

void BpeTokenizer::save_tokenizer_json(const std::string& path) const {
  const Model& m = *model_;
  // Written by hand rather than through nlohmann's ordered_json, whose objects insert in
  // linear time (quadratic for a 50,000-token vocabulary).
  std::string out = "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n";
  out += "  \"added_tokens\": [";
  for (size_t i = 0; i < m.specials.size(); ++i) {
    out += i ? ",\n" : "\n";
    out += "    {\"id\": " + std::to_string(m.specials[i].second) + ", \"content\": ";
    append_json_string(out, m.specials[i].first);
    out +=
        ", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, "
        "\"normalized\": true, \"special\": true}";
  }
  out += m.specials.empty() ? "],\n" : "\n  ],\n";
  out +=
      "  \"normalizer\": null,\n"
      "  \"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
      "\"trim_offsets\": true, \"use_regex\": true},\n"
      "  \"post_processor\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, "
      "\"trim_offsets\": false, \"use_regex\": true},\n"
      "  \"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": true, "
      "\"trim_offsets\": true, \"use_regex\": true},\n"
      "  \"model\": {\n"
      "    \"type\": \"BPE\",\n    \"dropout\": null,\n    \"unk_token\": null,\n"
      "    \"continuing_subword_prefix\": \"\",\n    \"end_of_word_suffix\": \"\",\n"
      "    \"fuse_unk\": false,\n    \"byte_fallback\": false,\n    \"vocab\": {";
  for (size_t id = 0; id < m.tokens.size(); ++id) {
    out += id ? ",\n      " : "\n      ";
    append_json_string(out, m.tokens[id]);
    out += ": " + std::to_string(id);
  }
  out += "\n    },\n    \"merges\": [";
  // "a b" strings, unless a token has a space (then the ["a", "b"] pairs of newer files).
  bool as_pairs = false;
  for (const auto& [a, b] : m.merges) {
    as_pairs = as_pairs || m.tokens[static_cast<size_t>(a)].find(' ') != std::string::npos ||
               m.tokens[static_cast<size_t>(b)].find(' ') != std::string::npos;
  }
  for (size_t r = 0; r < m.merges.size(); ++r) {
    out += r ? ",\n      " : "\n      ";
    const std::string& a = m.tokens[static_cast<size_t>(m.merges[r].first)];
    const std::string& b = m.tokens[static_cast<size_t>(m.merges[r].second)];
    if (as_pairs) {
      out += "[";
      append_json_string(out, a);
      out += ", ";
      append_json_string(out, b);
      out += "]";
    } else {
      append_json_string(out, a + " " + b);
    }
  }
  out += "\n    ]\n  }\n}\n";
  io::AtomicFile f(path);
  f.write(std::as_bytes(std::span(out.data(), out.size())));
  f.commit();
}

// ---------------------------------------------------------------------------------------------
// StreamDecoder

std::string StreamDecoder::push(int id) {
  pending_ += tokenizer_->token_bytes(id);
  std::string out;
  const size_t used = decode_whatwg(pending_, out, /*flush=*/false);
  pending_.erase(0, used);
  return out;
}

std::string StreamDecoder::finish() {
  std::string out;
  decode_whatwg(pending_, out, /*flush=*/true);
  pending_.clear();
  return out;
}

}  // namespace tinylm
