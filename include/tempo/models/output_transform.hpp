// The inverse of the target transform a model was trained on: transformed prediction z →
// seconds. y = z·scale + mean, then Box-Cox⁻¹ (sklearn PowerTransformer, standardised), exp
// (log target) or identity.
#pragma once

#include <cmath>
#include <limits>
#include <string>

#include "tempo/core/error.hpp"
#include "tempo/io/json.hpp"

namespace tempo {

struct OutputTransform {
    enum class Kind { none, log, boxcox };
    Kind kind = Kind::none;
    double lambda = 0.0, mean = 0.0, scale = 1.0;

    // {"kind": "boxcox"|"log"|"none", "lambda": λ (boxcox only), "mean": μ, "scale": σ}
    static OutputTransform from_json(const json::Node& node) {
        OutputTransform t;
        const std::string& kind = node["kind"].as_string();
        if (kind == "boxcox") {
            t.kind = Kind::boxcox;
            node.only_keys({"kind", "lambda", "mean", "scale"});
            t.lambda = node["lambda"].as_double();
        } else if (kind == "log" || kind == "none") {
            t.kind = kind == "log" ? Kind::log : Kind::none;
            node.only_keys({"kind", "mean", "scale"});
        } else {
            node["kind"].fail("unknown transform \"" + kind + "\" (boxcox, log, none)");
        }
        if (auto m = node.find("mean")) t.mean = m->as_double();
        if (auto s = node.find("scale")) t.scale = s->as_double();
        if (!(t.scale > 0.0) || !std::isfinite(t.scale) || !std::isfinite(t.mean) ||
            !std::isfinite(t.lambda))
            node.fail("mean, scale and lambda must be finite and scale positive");
        return t;
    }

    double seconds(double z) const {
        const double y = z * scale + mean;
        switch (kind) {
        case Kind::log:
            return std::exp(y);
        case Kind::boxcox: {
            if (lambda == 0.0) return std::exp(y);
            // Outside Box-Cox's range the base is clamped at 0 (0 s for λ > 0, +inf for λ < 0).
            const double base = lambda * y + 1.0;
            if (base <= 0.0) return lambda > 0 ? 0.0 : std::numeric_limits<double>::infinity();
            return std::pow(base, 1.0 / lambda);
        }
        case Kind::none:
            break;
        }
        return y;
    }
};

} // namespace tempo
