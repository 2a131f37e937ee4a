// Multi-head self-attention with torch.nn.MultiheadAttention's parameters and math:
// one fused in-projection (q | k | v), scaled dot-product attention per head with an
// optional key-padding mask, and the out-projection (with an optional fused residual).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "tempo/core/error.hpp"
#include "tempo/core/workspace.hpp"
#include "tempo/nn/linear.hpp"

namespace tempo::nn {

class MultiHeadAttention {
public:
    MultiHeadAttention() = default;
    // in_proj_weight: 3d × d, in_proj_bias: 3d (or null), out_proj_weight: d × d,
    // out_proj_bias: d (or null) — the names and layouts of PyTorch's state_dict.
    MultiHeadAttention(const float* in_proj_weight, const float* in_proj_bias,
                       const float* out_proj_weight, const float* out_proj_bias,
                       std::size_t d_model, std::size_t heads)
        : in_proj_(in_proj_weight, in_proj_bias, 3 * d_model, d_model),
          out_proj_(out_proj_weight, out_proj_bias, d_model, d_model), d_model_(d_model),
          heads_(heads) {
        if (heads == 0 || d_model % heads != 0)
            throw Error("MultiHeadAttention", std::to_string(heads) +
                                                  " heads do not divide d_model " +
                                                  std::to_string(d_model));
    }

    std::size_t d_model() const noexcept { return d_model_; }
    std::size_t heads() const noexcept { return heads_; }

    // Workspace floats one forward call needs (reserve them as a sum with the caller's own).
    std::size_t workspace_floats(std::size_t batch, std::size_t seq) const {
        return Workspace::rounded(batch * seq * 3 * d_model_) +
               Workspace::rounded(batch * seq * d_model_) +
               Workspace::rounded(kernels::attention_scratch_floats(seq, d_model_));
    }

    // x: batch × seq rows of d_model (stride ldx); key_padding: batch × seq bytes, nonzero =
    // padded key, or null. y = attention(x) [+ residual]; y must not alias x.
    void forward(const float* x, std::size_t ldx, std::size_t batch, std::size_t seq,
                 const std::uint8_t* key_padding, Workspace& ws, float* y, std::size_t ldy,
                 const float* residual = nullptr, std::size_t ldr = 0) const {
        const std::size_t rows = batch * seq;
        Workspace::Scope scope(ws);
        float* qkv = ws.take(rows * 3 * d_model_);
        float* ctx = ws.take(rows * d_model_);
        float* scratch = ws.take(kernels::attention_scratch_floats(seq, d_model_));
        in_proj_.forward(x, ldx, rows, qkv, 3 * d_model_);
        kernels::active::attention({batch, seq, d_model_, heads_}, qkv, 3 * d_model_, key_padding,
                                   scratch, ctx, d_model_);
        out_proj_.forward(ctx, d_model_, rows, y, ldy, residual, ldr);
    }

private:
    Linear in_proj_, out_proj_;
    std::size_t d_model_ = 0, heads_ = 1;
};

} // namespace tempo::nn
