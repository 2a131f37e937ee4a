// A chain of Linear layers run over ping-pong buffers from the caller's workspace.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "tempo/core/workspace.hpp"
#include "tempo/nn/linear.hpp"

namespace tempo::nn {

class Mlp {
public:
    Mlp() = default;
    explicit Mlp(std::vector<Linear> layers) : layers_(std::move(layers)) {}

    bool empty() const noexcept { return layers_.empty(); }
    const std::vector<Linear>& layers() const noexcept { return layers_; }
    std::size_t out_features() const noexcept { return layers_.back().out_features(); }
    std::size_t widest() const noexcept {
        std::size_t w = 0;
        for (const Linear& l : layers_) w = std::max(w, l.out_features());
        return w;
    }
    std::size_t workspace_floats(std::size_t rows) const {
        return 2 * Workspace::rounded(rows * widest());
    }

    // Runs every layer on m rows of x (stride ldx); returns the output (stride out_features()),
    // which lives in `ws` until the caller's scope ends.
    const float* forward(const float* x, std::size_t ldx, std::size_t m, Workspace& ws) const {
        float* ping = ws.take(m * widest());
        float* pong = ws.take(m * widest());
        for (const Linear& layer : layers_) {
            layer.forward(x, ldx, m, ping, layer.out_features());
            x = ping;
            ldx = layer.out_features();
            std::swap(ping, pong);
        }
        return x;
    }

private:
    std::vector<Linear> layers_;
};

} // namespace tempo::nn
