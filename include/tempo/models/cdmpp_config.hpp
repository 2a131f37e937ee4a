// The hyper-parameters of a CDMPP model, as the converter writes them (`tempo.config`).
#pragma once

#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "tempo/io/json.hpp"
#include "tempo/kernels/epilogue.hpp"
#include "tempo/program/feature_set.hpp"

namespace tempo {

struct CdmppConfig {
    enum class Pooling { flatten, mean, sum };

    std::size_t feature_dim = 164, d_model = 164, heads = 4, ffn_dim = 2048, layers = 11;
    kernels::Activation activation = kernels::Activation::relu;
    bool norm_first = false, final_norm = false;
    float layer_norm_eps = 1e-5f;
    Pooling pooling = Pooling::flatten;
    std::size_t max_leaves = 5;
    std::vector<std::size_t> embed_dims, device_dims, decoder_dims;
    bool device = false;
    float pe_scale = 1.0f; // amplitude of the tree PE added to the features (CDMPP: 1)
    // The columns the model was trained on; absent in files that do not say (older files,
    // synthetic fixtures): then only feature_dim is known.
    std::optional<FeatureSet> features;

    static constexpr std::size_t kDeviceFeatures = 8;

    bool projects_input() const noexcept { return d_model != feature_dim; }
    std::size_t pooled_width() const noexcept {
        return pooling == Pooling::flatten ? max_leaves * d_model : d_model;
    }
    std::size_t embedding_width() const noexcept { return embed_dims.back(); }

    static CdmppConfig from_json(const json::Node& node) {
        node.only_keys({"feature_dim", "d_model", "heads", "ffn_dim", "layers", "activation",
                        "norm_first", "final_norm", "layer_norm_eps", "pooling", "max_leaves",
                        "embed_dims", "device", "device_dims", "decoder_dims", "dropout", "bn_eps",
                        "pe_scale", "features"});
        CdmppConfig c;
        auto positive = [&](const char* key) {
            const std::uint64_t v = node[key].as_uint64();
            if (v == 0 || v > (1u << 20)) node[key].fail("expected a size in 1..1048576");
            return std::size_t(v);
        };
        auto sizes = [&](const char* key) {
            std::vector<std::size_t> out;
            const json::Node list = node[key];
            for (std::size_t i = 0; i < list.as_array().size(); ++i) {
                const std::uint64_t v = list[i].as_uint64();
                if (v == 0 || v > (1u << 20)) list[i].fail("expected a size in 1..1048576");
                out.push_back(std::size_t(v));
            }
            return out;
        };
        c.feature_dim = positive("feature_dim");
        c.d_model = positive("d_model");
        c.heads = positive("heads");
        c.ffn_dim = positive("ffn_dim");
        c.layers = node["layers"].as_uint64();
        c.max_leaves = positive("max_leaves");
        if (c.d_model % c.heads != 0)
            node["heads"].fail(std::to_string(c.heads) + " heads do not divide d_model " +
                               std::to_string(c.d_model));
        const std::string& act = node["activation"].as_string();
        if (act == "relu")
            c.activation = kernels::Activation::relu;
        else if (act == "gelu")
            c.activation = kernels::Activation::gelu_erf;
        else
            node["activation"].fail("expected \"relu\" or \"gelu\"");
        c.norm_first = node["norm_first"].as_bool();
        c.final_norm = node["final_norm"].as_bool();
        c.layer_norm_eps = node["layer_norm_eps"].as_float();
        if (!(c.layer_norm_eps > 0.0f)) node["layer_norm_eps"].fail("must be positive");
        const std::string& pool = node["pooling"].as_string();
        if (pool == "flatten")
            c.pooling = Pooling::flatten;
        else if (pool == "mean")
            c.pooling = Pooling::mean;
        else if (pool == "sum")
            c.pooling = Pooling::sum;
        else
            node["pooling"].fail("expected \"flatten\", \"mean\" or \"sum\"");
        // Files written before pe_scale existed add the PE at full amplitude.
        if (auto pe = node.find("pe_scale")) {
            c.pe_scale = pe->as_float();
            if (!(c.pe_scale >= 0.0f) || !std::isfinite(c.pe_scale))
                pe->fail("must be a finite number >= 0");
        }
        if (auto f = node.find("features")) {
            const std::string& name = f->as_string();
            c.features = find_feature_set(name);
            if (!c.features) f->fail(unknown_feature_set(name));
            if (tempo::feature_dim(*c.features) != c.feature_dim)
                f->fail(name + " rows have " + std::to_string(tempo::feature_dim(*c.features)) +
                        " columns, feature_dim is " + std::to_string(c.feature_dim));
        }
        c.embed_dims = sizes("embed_dims");
        if (c.embed_dims.empty()) node["embed_dims"].fail("needs at least one layer");
        c.decoder_dims = sizes("decoder_dims");
        c.device = node["device"].as_bool();
        if (c.device) {
            c.device_dims = sizes("device_dims");
            if (c.device_dims.empty() || c.device_dims.back() != c.embedding_width())
                node["device_dims"].fail("must end with the embedding width " +
                                         std::to_string(c.embedding_width()));
        }
        return c;
    }
};

} // namespace tempo
