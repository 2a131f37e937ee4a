// One layer of torch.nn.TransformerEncoderLayer (batch_first), post- or pre-norm:
//   post: h = LN1(h + MHA(h));   h = LN2(h + FFN(h))
//   pre:  h = h + MHA(LN1(h));   h = h + FFN(LN2(h))
// with FFN(v) = linear2(act(linear1(v))). Residual adds are fused into the GEMM epilogues.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tempo/core/workspace.hpp"
#include "tempo/nn/layer_norm.hpp"
#include "tempo/nn/linear.hpp"
#include "tempo/nn/multihead_attention.hpp"

namespace tempo::nn {

class TransformerEncoderLayer {
public:
    TransformerEncoderLayer() = default;
    TransformerEncoderLayer(MultiHeadAttention attention, Linear linear1, Linear linear2,
                            LayerNorm norm1, LayerNorm norm2, bool norm_first)
        : attention_(std::move(attention)), linear1_(std::move(linear1)),
          linear2_(std::move(linear2)), norm1_(std::move(norm1)), norm2_(std::move(norm2)),
          norm_first_(norm_first) {}

    std::size_t d_model() const noexcept { return attention_.d_model(); }

    std::size_t workspace_floats(std::size_t batch, std::size_t seq) const {
        const std::size_t rows = batch * seq;
        return 2 * Workspace::rounded(rows * d_model()) +
               Workspace::rounded(rows * linear1_.out_features()) +
               attention_.workspace_floats(batch, seq);
    }

    // h: batch × seq rows of d_model, updated in place.
    void forward(float* h, std::size_t batch, std::size_t seq, const std::uint8_t* key_padding,
                 Workspace& ws) const {
        Workspace::Scope scope(ws);
        const std::size_t d = d_model(), ff = linear1_.out_features(), rows = batch * seq;
        float* t = ws.take(rows * d);
        float* a = ws.take(rows * d);
        float* u = ws.take(rows * ff);
        if (!norm_first_) {
            attention_.forward(h, d, batch, seq, key_padding, ws, t, d, h, d);
            norm1_.forward(t, d, rows, h, d);
            linear1_.forward(h, d, rows, u, ff);
            linear2_.forward(u, ff, rows, t, d, h, d);
            norm2_.forward(t, d, rows, h, d);
        } else {
            norm1_.forward(h, d, rows, a, d);
            attention_.forward(a, d, batch, seq, key_padding, ws, t, d, h, d);
            norm2_.forward(t, d, rows, a, d);
            linear1_.forward(a, d, rows, u, ff);
            linear2_.forward(u, ff, rows, h, d, t, d);
        }
    }

private:
    MultiHeadAttention attention_;
    Linear linear1_, linear2_;
    LayerNorm norm1_, norm2_;
    bool norm_first_ = false;
};

} // namespace tempo::nn
