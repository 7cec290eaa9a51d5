// libFuzzer target: arbitrary bytes as an EVD0 delta, applied to a fixed small base (the one
// tools/gen_evl_fixtures.py builds the seed corpus against). Each input runs three times: as
// given; with a correct CRC trailer; and with the base's CRC written into the header as well,
// so that mutations reach the checks behind the CRC and the base check. Rejection must be a
// tinylm::Error. A delta that applies must re-export (eps 0) to one that reconstructs the
// same parameters bit for bit.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "tinylm/checkpoints/evl_checkpoint.h"
#include "tinylm/checkpoints/evl_delta.h"
#include "tinylm/core/error.h"

namespace {

namespace checkpoints = tinylm::checkpoints;

void require(bool ok) {
  if (!ok) std::abort();
}

// vocab 5, d_model 4, 1 layer, kernel 2, hidden 6, 2 experts, top_k 1; parameter i is
// ((7 i) mod 17 - 8) / 16, exactly as the corpus generator writes it.
const checkpoints::EvlCheckpoint& base() {
  static const checkpoints::EvlCheckpoint* const b = [] {
    tinylm::evermind::Config c;
    c.vocab_size = 5;
    c.d_model = 4;
    c.n_layers = 1;
    c.conv_kernel = 2;
    c.hidden_dim = 6;
    c.n_experts = 2;
    c.top_k = 1;
    std::vector<float> p(tinylm::evermind::param_layout(c).size());
    for (size_t i = 0; i < p.size(); ++i)
      p[i] = static_cast<float>(static_cast<int>((7 * i) % 17) - 8) / 16.0f;
    return new checkpoints::EvlCheckpoint(
        checkpoints::decode_evl(checkpoints::encode_evl(c, p), "base"));
  }();
  return *b;
}

void check_one(std::span<const std::byte> bytes) {
  try {
    checkpoints::decode_evl_delta_info(bytes, "fuzz.evd");
  } catch (const tinylm::Error&) {
  }
  checkpoints::EvlDeltaApplied a;
  try {
    a = checkpoints::apply_evl_delta(base(), bytes, "fuzz.evd");
  } catch (const tinylm::Error&) {
    return;  // a rejected delta: the expected outcome for most inputs
  }
  require(a.params.size() == base().params.size());
  checkpoints::EvlDeltaSummary s;
  const std::vector<std::byte> again = checkpoints::encode_evl_delta(base(), a.params, 0.0f, &s);
  require(s.rows_exported <= a.rows_applied);
  const checkpoints::EvlDeltaApplied b = checkpoints::apply_evl_delta(base(), again, "again");
  require(std::memcmp(a.params.data(), b.params.data(), a.params.size() * sizeof(float)) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  check_one(bytes);
  if (size < checkpoints::kEvlTrailerBytes) return 0;
  std::vector<std::byte> sealed(bytes.begin(), bytes.end() - checkpoints::kEvlTrailerBytes);
  checkpoints::append_evl_trailer(sealed);
  check_one(sealed);
  if (size >= checkpoints::kEvlDeltaHeaderBytes + checkpoints::kEvlTrailerBytes) {
    sealed.resize(size - checkpoints::kEvlTrailerBytes);
    const uint32_t crc = base().crc;
    for (int i = 0; i < 4; ++i) sealed[36 + i] = static_cast<std::byte>((crc >> (8 * i)) & 0xffu);
    checkpoints::append_evl_trailer(sealed);
    check_one(sealed);
  }
  return 0;
}
