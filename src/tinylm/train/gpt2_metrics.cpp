#include "tinylm/train/gpt2_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "tinylm/core/error.h"
#include "tinylm/core/param_store.h"
#include "tinylm/io/json_strict.h"
#include "tinylm/io/text_file.h"
#include "tinylm/models/gpt2/tensors.h"

namespace tinylm::train {

std::string py_repr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  // The shortest round-tripping precision, found with %e so digits and exponent come apart.
  char buf[40];
  int p = 1;
  for (; p < 17; ++p) {
    std::snprintf(buf, sizeof buf, "%.*e", p - 1, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  std::snprintf(buf, sizeof buf, "%.*e", p - 1, x);
  const std::string s(buf);
  const size_t e = s.find('e');
  const bool negative = s[0] == '-';
  std::string digits;
  for (size_t i = negative ? 1 : 0; i < e; ++i) {
    if (s[i] != '.') digits += s[i];
  }
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  const int exp = std::atoi(s.c_str() + e + 1);
  std::string out(negative ? 1 : 0, '-');
  const int n = static_cast<int>(digits.size());
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out.append("0.").append(static_cast<size_t>(-exp - 1), '0').append(digits);
    } else if (exp + 1 >= n) {
      out.append(digits).append(static_cast<size_t>(exp + 1 - n), '0').append(".0");
    } else {
      out.append(digits, 0, static_cast<size_t>(exp + 1))
          .append(".")
          .append(digits, static_cast<size_t>(exp + 1));
    }
  } else {
    out.append(digits, 0, 1);
    if (n > 1) out.append(".").append(digits, 1);
    char tail[16];
    std::snprintf(tail, sizeof tail, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    out += tail;
  }
  return out;
}

namespace {

template <class F>
double pairwise(const float* x, size_t n, F f) {
  if (n <= 128) {
    double s = 0.0;
    for (size_t i = 0; i < n; ++i) s += f(static_cast<double>(x[i]));
    return s;
  }
  const size_t half = n / 2;
  return pairwise(x, half, f) + pairwise(x + half, n - half, f);
}

}  // namespace

double pairwise_sum(std::span<const float> x) {
  return pairwise(x.data(), x.size(), [](double v) { return v; });
}

double pairwise_abs_sum(std::span<const float> x) {
  return pairwise(x.data(), x.size(), [](double v) { return std::fabs(v); });
}

std::vector<int32_t> load_token_grid(const std::string& path, int64_t rows, int64_t cols,
                                     int64_t vocab_size) {
  const nlohmann::ordered_json j = io::parse_json_strict(io::read_file(path), path);
  check(j.is_object() && j.contains("ids"), path, ": expected an object with an \"ids\" array");
  const auto& ids = j["ids"];
  check(ids.is_array() && static_cast<int64_t>(ids.size()) == rows, path, ": \"ids\" must hold ",
        rows, " rows of ", cols, " token ids");
  std::vector<int32_t> grid;
  grid.reserve(static_cast<size_t>(rows * cols));
  for (size_t r = 0; r < ids.size(); ++r) {
    const auto& row = ids[r];
    check(row.is_array() && static_cast<int64_t>(row.size()) == cols, path, ": row ", r,
          " must hold ", cols, " token ids (the grid is ", rows, " x ", cols, ")");
    for (size_t c = 0; c < row.size(); ++c) {
      const auto& v = row[c];
      check(v.is_number_integer(), path, ": ids[", r, "][", c, "] is not an integer");
      const int64_t id =
          v.is_number_unsigned()
              ? static_cast<int64_t>(std::min<uint64_t>(v.get<uint64_t>(), INT64_MAX))
              : v.get<int64_t>();
      if (id < 0 || id >= vocab_size)
        fail(path, ": ids[", r, "][", c, "] = ", v.dump(), " is outside the vocabulary [0, ",
             vocab_size, ")");
      grid.push_back(static_cast<int32_t>(id));
    }
  }
  return grid;
}

std::vector<Fingerprint> fingerprint_weights(const gpt2::Config& config,
                                             std::span<const float> params) {
  const ParamLayout layout = gpt2::param_layout(config);
  check(params.size() == layout.size(),
        "[fingerprint_weights] parameter count does not match the configuration");
  const std::vector<gpt2::TensorSpec> specs = gpt2::tensor_specs(config);
  const auto fingerprint = [&](const std::string& name) {
    const ParamEntry& e = layout.at(name);
    std::span<const float> values = params.subspan(e.offset, e.numel);
    std::vector<float> t;
    if (std::ranges::find(specs, name, &gpt2::TensorSpec::name)
            ->conv1d) {  // [in, out] -> [out, in]
      const int64_t in = e.shape[0], out = e.shape[1];
      t.resize(e.numel);
      for (int64_t o = 0; o < out; ++o) {
        for (int64_t i = 0; i < in; ++i)
          t[static_cast<size_t>(o * in + i)] = values[static_cast<size_t>(i * out + o)];
      }
      values = t;
    }
    Fingerprint f{name, pairwise_sum(values), pairwise_abs_sum(values), {}};
    f.first8.assign(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(
                                                         std::min<size_t>(8, values.size())));
    return f;
  };
  const std::string last = cat("h.", config.n_layer - 1, ".attn.c_proj.weight");
  return {fingerprint("wte.weight"),          fingerprint("h.0.attn.c_attn.weight"),
          fingerprint("h.0.mlp.c_fc.weight"), fingerprint(last),
          fingerprint("ln_f.weight"),         fingerprint("wpe.weight")};
}

std::string metrics_json(const RunMetrics& m) {
  // Written by hand: numbers must appear exactly as py_repr spells them.
  std::string s;
  const auto put = [&s](auto... parts) { (s.append(parts), ...); };
  const auto quoted = [&put](double x) { put("\"", py_repr(x), "\""); };
  put("{\"device\": ",
      m.gpu.empty() ? "\"CPU\"" : "\"GPU\", \"gpu\": " + nlohmann::json(m.gpu).dump(),
      ", \"devices\": ", std::to_string(m.devices), ", \"steps\": ", std::to_string(m.steps),
      ", \"batch_size\": ", std::to_string(m.batch_size),
      ", \"seq_len\": ", std::to_string(m.seq_len), ", \"lr\": ", py_repr(m.lr),
      ", \"n_params\": ", std::to_string(m.n_params), ", \"initial_loss\": ");
  quoted(m.initial_loss);
  put(", \"jit_calls\": null, \"records\": [");
  for (size_t r = 0; r < m.records.size(); ++r) {
    const MetricsRecord& rec = m.records[r];
    put(r ? ", " : "", "{\"step\": ", std::to_string(rec.step), ", \"loss\": ");
    quoted(rec.loss);
    put(", \"ms\": ", py_repr(rec.ms), ", \"weights\": {");
    for (size_t w = 0; w < rec.weights.size(); ++w) {
      const Fingerprint& f = rec.weights[w];
      put(w ? ", " : "", nlohmann::json(f.name).dump(), ": {\"sum\": ");
      quoted(f.sum);
      put(", \"abs_sum\": ");
      quoted(f.abs_sum);
      put(", \"first8\": [");
      for (size_t i = 0; i < f.first8.size(); ++i) {
        put(i ? ", " : "");
        quoted(f.first8[i]);
      }
      put("]}");
    }
    put("}}");
  }
  put("]}\n");
  return s;
}

}  // namespace tinylm::train
