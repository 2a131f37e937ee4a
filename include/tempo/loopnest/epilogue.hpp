// Element-wise epilogues Relay fuses after a reduction (bias add, activations, residual add,
// multiply, scale): each is its own stage over the output's axes, as in TOPI.
#pragma once

#include "tempo/loopnest/compute.hpp"

#include <string>

namespace tempo::loopnest {

inline bool is_epilogue(const std::string& name) {
    for (const char* e : {"bias_add", "relu", "relu6", "hardswish", "hardsigmoid", "sigmoid",
                          "tanh", "gelu", "add", "multiply", "scale"})
        if (name == e) return true;
    return false;
}

inline constexpr double kEpilogueScale = 0.125; // "scale": attention's 1/sqrt(64)

// Applies epilogue `name` to tensor x; `channel_axis` is the axis bias_add indexes.
inline int apply_epilogue(DagBuilder& b, int x, const std::string& name, std::size_t channel_axis) {
    if (!is_epilogue(name)) throw Error("epilogue", "unknown epilogue '" + name + "'");
    const auto shape = b.tensor_info(x).shape;
    std::vector<IterVar> axes;
    std::vector<Expr> idx;
    for (std::size_t d = 0; d < shape.size(); ++d) {
        axes.push_back(b.axis("ax" + std::to_string(d), shape[d]));
        idx.push_back(b.v(axes.back()));
    }
    Expr v = load(x, idx);
    auto clip6 = [](Expr e) { return min(max(std::move(e), float_imm(0)), float_imm(6)); };
    Expr body;
    std::string stage = "T_" + name;
    if (name == "bias_add") {
        int bias = b.input("bias", {shape[channel_axis]});
        body = v + load(bias, {idx[channel_axis]});
        stage = "T_add";
    } else if (name == "relu") {
        body = max(v, float_imm(0));
    } else if (name == "relu6") {
        body = clip6(v);
        stage = "T_clip";
    } else if (name == "hardswish") {
        body = v * clip6(v + float_imm(3)) / float_imm(6);
    } else if (name == "hardsigmoid") {
        body = clip6(v + float_imm(3)) / float_imm(6);
    } else if (name == "sigmoid") {
        body = float_imm(1) / (float_imm(1) + call(MathFn::Exp, float_imm(0) - v));
    } else if (name == "tanh") {
        body = call(MathFn::Tanh, v);
    } else if (name == "gelu") {
        body = float_imm(0.5) * v *
               (float_imm(1) + call(MathFn::Erf, v * float_imm(0.7071067811865476)));
    } else if (name == "add" || name == "multiply") {
        int other = b.input(name == "add" ? "residual" : "multiplier", shape);
        body = name == "add" ? v + load(other, idx) : v * load(other, idx);
    } else { // scale
        body = v * float_imm(kEpilogueScale);
    }
    return b.stage(stage, axes, body);
}

} // namespace tempo::loopnest
