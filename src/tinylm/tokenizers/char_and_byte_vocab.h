#pragma once
// Vocabularies made rather than trained, as byte-level BPE tokenizers (so every tool that reads
// GPT-2's tokenizer.json reads them): the 256 bytes, or the characters of a text (nanoGPT's
// shakespeare_char).
#include <string_view>

#include "tinylm/tokenizers/bpe.h"

namespace tinylm {

// Ids 0..255: the bytes in order, then <|endoftext|> (256). No merges: any text, byte by byte.
BpeTokenizer byte_vocabulary();

// The sorted unique characters (code points) of `text` (valid UTF-8) as ids 0..n-1, each
// encoding to its one token; no special tokens. A character of several bytes is built from
// them by merges, so its bytes and their prefixes are tokens too (after the characters): a
// text of ASCII only gives exactly its characters. Encoding a character outside the set is an
// Error naming it, even where its bytes are all tokens (the tokenizer knows the vocabulary as
// one of characters: bpe_model.h's whole_characters).
BpeTokenizer char_vocabulary(std::string_view text);

// microgpt's character set (CharTokenizer's: sorted unique characters, UTF-8) as ids 0..n-1
// and its BOS, the documents' separator, as <|endoftext|> (n): the ids its model reads. The
// characters must be single bytes (ASCII): one of several bytes would need byte tokens beyond
// the model's vocabulary, so it is an Error naming it.
BpeTokenizer microgpt_vocabulary(std::string_view chars);

}  // namespace tinylm
