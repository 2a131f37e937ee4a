// CdmppModel — a CDMPP latency predictor loaded from a converted safetensors file
// (converters/README.md is the file's contract and the math reproduced here).
//
//   auto model = tempo::CdmppModel::load("weights/compact.safetensors");
//   tempo::Workspace ws;                       // one per thread
//   double seconds = model.predict(program, ws);
//
// Loading validates every tensor and packs the weights; afterwards the model is immutable
// and may be shared between threads. Prediction allocates nothing once a workspace has seen
// the largest batch, and throws only for an invalid program.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "tempo/core/error.hpp"
#include "tempo/core/workspace.hpp"
#include "tempo/io/safetensors.hpp"
#include "tempo/models/cdmpp_config.hpp"
#include "tempo/models/output_transform.hpp"
#include "tempo/nn/mlp.hpp"
#include "tempo/nn/sparse_projection.hpp"
#include "tempo/nn/transformer_encoder_layer.hpp"
#include "tempo/program/compact_ast.hpp"
#include "tempo/program/validate.hpp"

namespace tempo {

struct LoadOptions {
    bool verify_selftest = false; // run the file's embedded self-test, throw on a mismatch
};

class CdmppModel {
public:
    static CdmppModel load(const std::string& path, LoadOptions options = {}) {
        return CdmppModel(io::SafeTensors::load(path), options);
    }

    CdmppModel(const io::SafeTensors& file, LoadOptions options = {});

    const CdmppConfig& config() const noexcept { return config_; }
    const OutputTransform& output_transform() const noexcept { return transform_; }
    const std::string& card() const noexcept { return card_; }
    AstLimits limits() const noexcept { return limits_; }

    // Throws tempo::Error naming `where` and the field when `ast` does not fit this model.
    void validate(const CompactAst& ast, std::string_view where) const {
        tempo::validate(ast, limits_, where);
    }

    // Predicted run time in seconds.
    double predict(const CompactAst& ast, Workspace& ws) const {
        const CompactAst* one = &ast;
        double seconds;
        predict(&one, 1, &seconds, ws);
        return seconds;
    }
    // Seconds for `count` programs; `transformed` (optional) receives the raw model outputs.
    void predict(const CompactAst* const* programs, std::size_t count, double* seconds,
                 Workspace& ws, float* transformed = nullptr) const;

    // The model on rows already normalised and positionally encoded, as
    // converters/cdmpp_torch.py's `preprocess` makes them (what PyTorch's forward takes):
    // x is batch × seq rows of feature_dim, used as scratch (overwritten); leaves[b] (1..seq)
    // real rows per program, a prefix; device: batch × 8 features when the model has the
    // device branch, else null. Writes batch transformed outputs to z. x, leaves, device and
    // z must not live in `ws`.
    void predict_preprocessed(float* x, std::size_t batch, std::size_t seq,
                              const std::size_t* leaves, const float* device, float* z,
                              Workspace& ws) const;

    // Floats of workspace a batch of `batch` programs with up to `leaves` leaves needs.
    std::size_t workspace_floats(std::size_t batch, std::size_t leaves) const;

    // Runs the embedded self-test; returns the largest |z − expected| / (atol + rtol·|expected|)
    // (≤ 1 passes). Throws when the file has none.
    double selftest_error() const;
    bool has_selftest() const noexcept { return selftest_.count > 0; }

private:
    // The model from normalised + encoded inputs on: x is batch × seq rows of feature_dim,
    // leaves[b] real rows per program (a prefix), device batch × 8 (or null); writes z.
    void forward(float* x, std::size_t batch, std::size_t seq, const std::size_t* leaves,
                 const float* device, float* z, Workspace& ws) const;
    // The same from the token rows on (d_model wide, after the input projection if any).
    void forward_tokens(float* h, std::size_t batch, std::size_t seq, const std::size_t* leaves,
                        const float* device, float* z, Workspace& ws) const;
    // One program's token rows: normalised features + positional encoding (feature_dim wide),
    // or, when the model projects its input, those rows already projected (d_model wide).
    void encode(const CompactAst& ast, float* rows, std::size_t* positions) const;
    void encode_projected(const CompactAst& ast, float* rows, std::size_t* positions,
                          Workspace& ws) const;
    // How errors name a program: its id, else "program".
    static std::string_view name_of(const CompactAst& ast) noexcept {
        return ast.id.empty() ? std::string_view("program") : std::string_view(ast.id);
    }

    CdmppConfig config_;
    AstLimits limits_;
    OutputTransform transform_;
    std::string card_;
    AlignedBuffer<float> norm_min_, norm_scale_; // x = (f − min)·scale + PE
    AlignedBuffer<float> pe_table_;              // PE rows for positions < kPeTableRows
    static constexpr std::size_t kPeTableRows = 512;
    static constexpr std::size_t kChunkRows = 320; // token rows per pass through the network
    nn::Linear input_proj_;
    // With an input projection, predict projects the raw (sparse) features directly:
    // row = proj_base_[p] + ((f − min) ⊙ scale)·Wᵀ, proj_base_[p] = b + PE(p)·Wᵀ for
    // p < kPeTableRows.
    nn::SparseProjection sparse_proj_;
    AlignedBuffer<float> proj_base_;
    std::vector<nn::TransformerEncoderLayer> encoder_;
    nn::LayerNorm final_norm_;
    nn::Mlp embed_, device_mlp_, decoder_;
    nn::Linear head_;
    AlignedBuffer<float> shared_scale_, shared_shift_;

    struct Selftest {
        std::size_t count = 0;
        double rtol = 0, atol = 0;
        AlignedBuffer<float> input, mask, device, output;
    } selftest_;
};

// ---------------------------------------------------------------------------------------

namespace detail {

// scale · PE(p): PE(p)[c] = sin(p / 10000^(2c/F)), PE(p)[c+1] = cos(p / 10000^(2(c+1)/F))
// for even c: CDMPP's exponent is 2c/F with the raw even index (not Vaswani's c/F).
inline void positional_encoding(std::size_t p, std::size_t width, double scale, float* out) {
    for (std::size_t c = 0; c < width; c += 2) {
        out[c] =
            float(scale * std::sin(double(p) / std::pow(10000.0, 2.0 * double(c) / double(width))));
        if (c + 1 < width)
            out[c + 1] =
                float(scale *
                      std::cos(double(p) / std::pow(10000.0, 2.0 * double(c + 1) / double(width))));
    }
}

// Loads tensors by name, checking shapes, and remembers which ones were used so the loader
// can reject a file with tensors its config does not explain.
class TensorReader {
public:
    explicit TensorReader(const io::SafeTensors& file) : file_(file) {}
    const float* operator()(const std::string& name, std::vector<std::size_t> shape) {
        used_.insert(name);
        return file_.tensor(name, shape).data();
    }
    nn::Linear linear(const std::string& prefix, std::size_t out, std::size_t in,
                      kernels::Activation act = kernels::Activation::none) {
        const float* w = (*this)(prefix + ".weight", {out, in});
        return nn::Linear(w, (*this)(prefix + ".bias", {out}), out, in, act);
    }
    nn::LayerNorm layer_norm(const std::string& prefix, std::size_t dim, float eps) {
        const float* g = (*this)(prefix + ".weight", {dim});
        return nn::LayerNorm(g, (*this)(prefix + ".bias", {dim}), dim, eps);
    }
    // Linear blocks `prefix.{j}.linear`, widths dims[j], input width `in`.
    nn::Mlp mlp(const std::string& prefix, std::size_t in, const std::vector<std::size_t>& dims,
                kernels::Activation first, kernels::Activation rest) {
        std::vector<nn::Linear> layers;
        for (std::size_t j = 0; j < dims.size(); ++j) {
            layers.push_back(linear(prefix + "." + std::to_string(j) + ".linear", dims[j], in,
                                    j == 0 ? first : rest));
            in = dims[j];
        }
        return nn::Mlp(std::move(layers));
    }
    void reject_unused(std::string_view ignored_prefix) const {
        for (const std::string& name : file_.names())
            if (!used_.count(name) && name.rfind(ignored_prefix, 0) != 0)
                throw Error(file_.label(),
                            "unexpected tensor " + json::quote(name) + " for this model's config");
    }

private:
    const io::SafeTensors& file_;
    std::set<std::string> used_;
};

} // namespace detail

inline CdmppModel::CdmppModel(const io::SafeTensors& file, LoadOptions options) {
    using kernels::Activation;
    const std::string& label = file.label();
    auto metadata_json = [&](const char* key) {
        return json::parse(file.metadata(key), label + ": metadata " + key);
    };
    if (file.metadata("tempo.model") != "cdmpp")
        throw Error(label,
                    "tempo.model is \"" + file.metadata("tempo.model") + "\", not a cdmpp model");
    if (file.metadata("tempo.format") != "1")
        throw Error(label, "tempo.format \"" + file.metadata("tempo.format") +
                               "\" is not supported (this build reads format 1)");
    const json::Value config_doc = metadata_json("tempo.config");
    config_ = CdmppConfig::from_json(json::Node(config_doc, label + ": tempo.config"));
    const json::Value transform_doc = metadata_json("tempo.output_transform");
    transform_ =
        OutputTransform::from_json(json::Node(transform_doc, label + ": tempo.output_transform"));
    if (file.has_metadata("tempo.card")) card_ = file.metadata("tempo.card");

    const CdmppConfig& c = config_;
    limits_ = {c.feature_dim, c.max_leaves, c.pooling == CdmppConfig::Pooling::flatten,
               c.device ? CdmppConfig::kDeviceFeatures : 0, c.features};
    detail::TensorReader read(file);

    const float* mn = read("norm.min", {c.feature_dim});
    const float* mx = read("norm.max", {c.feature_dim});
    norm_min_ = AlignedBuffer<float>(c.feature_dim);
    norm_scale_ = AlignedBuffer<float>(c.feature_dim);
    for (std::size_t i = 0; i < c.feature_dim; ++i) {
        if (!std::isfinite(mn[i]) || !std::isfinite(mx[i]) || mx[i] < mn[i])
            throw Error(label, "tensor \"norm.max\": column " + std::to_string(i) +
                                   " is below norm.min or not finite");
        norm_min_[i] = mn[i];
        norm_scale_[i] = float(1.0 / (double(mx[i]) - double(mn[i]) + 1e-6));
    }
    pe_table_ = AlignedBuffer<float>(kPeTableRows * c.feature_dim);
    for (std::size_t p = 0; p < kPeTableRows; ++p)
        detail::positional_encoding(p, c.feature_dim, c.pe_scale,
                                    pe_table_.data() + p * c.feature_dim);

    if (c.projects_input()) {
        input_proj_ = read.linear("input_proj", c.d_model, c.feature_dim);
        const float* w = read("input_proj.weight", {c.d_model, c.feature_dim});
        sparse_proj_ =
            nn::SparseProjection(w, c.d_model, c.feature_dim, norm_min_.data(), norm_scale_.data());
        proj_base_ = AlignedBuffer<float>(kPeTableRows * c.d_model);
        input_proj_.forward(pe_table_.data(), c.feature_dim, kPeTableRows, proj_base_.data(),
                            c.d_model);
    }
    for (std::size_t i = 0; i < c.layers; ++i) {
        const std::string p = "encoder.layers." + std::to_string(i);
        const std::size_t d = c.d_model;
        const float* in_w = read(p + ".self_attn.in_proj_weight", {3 * d, d});
        const float* in_b = read(p + ".self_attn.in_proj_bias", {3 * d});
        const float* out_w = read(p + ".self_attn.out_proj.weight", {d, d});
        const float* out_b = read(p + ".self_attn.out_proj.bias", {d});
        // Read in file order so the first mismatch reported is the first one.
        nn::Linear linear1 = read.linear(p + ".linear1", c.ffn_dim, d, c.activation);
        nn::Linear linear2 = read.linear(p + ".linear2", d, c.ffn_dim);
        nn::LayerNorm norm1 = read.layer_norm(p + ".norm1", d, c.layer_norm_eps);
        nn::LayerNorm norm2 = read.layer_norm(p + ".norm2", d, c.layer_norm_eps);
        encoder_.emplace_back(nn::MultiHeadAttention(in_w, in_b, out_w, out_b, d, c.heads),
                              std::move(linear1), std::move(linear2), std::move(norm1),
                              std::move(norm2), c.norm_first);
    }
    if (c.final_norm) final_norm_ = read.layer_norm("encoder.norm", c.d_model, c.layer_norm_eps);
    // Embedding block 0 has no activation (CDMPP's flatten block), the others ReLU.
    embed_ = read.mlp("embed", c.pooled_width(), c.embed_dims, Activation::none, Activation::relu);
    if (c.device) {
        device_mlp_ = read.mlp("device_mlp", CdmppConfig::kDeviceFeatures, c.device_dims,
                               Activation::relu, Activation::relu);
        const std::size_t e = c.embedding_width();
        const float* s = read("shared_bn.scale", {e});
        const float* t = read("shared_bn.shift", {e});
        shared_scale_ = AlignedBuffer<float>(e);
        shared_shift_ = AlignedBuffer<float>(e);
        std::copy(s, s + e, shared_scale_.data());
        std::copy(t, t + e, shared_shift_.data());
    }
    decoder_ = read.mlp("decoder", c.embedding_width(), c.decoder_dims, Activation::relu,
                        Activation::relu);
    const std::size_t last = c.decoder_dims.empty() ? c.embedding_width() : c.decoder_dims.back();
    head_ = read.linear("head", 1, last);
    read.reject_unused("selftest.");

    if (file.has_metadata("tempo.selftest")) {
        const json::Value doc = metadata_json("tempo.selftest");
        const json::Node st(doc, label + ": tempo.selftest");
        selftest_.count = st["count"].as_uint64();
        selftest_.rtol = st["rtol"].as_double();
        selftest_.atol = st["atol"].as_double();
        const std::size_t B = selftest_.count, L = c.max_leaves, F = c.feature_dim;
        auto copy = [&](const char* name, std::vector<std::size_t> shape) {
            const io::Tensor& t = file.tensor(name, shape);
            AlignedBuffer<float> out(t.numel());
            std::copy(t.begin(), t.end(), out.data());
            return out;
        };
        selftest_.input = copy("selftest.input", {B, L, F});
        selftest_.mask = copy("selftest.input_mask", {B, L});
        if (c.device)
            selftest_.device = copy("selftest.input_device", {B, CdmppConfig::kDeviceFeatures});
        selftest_.output = copy("selftest.output", {B});
    }
    if (options.verify_selftest) {
        const double err = selftest_error();
        if (!(err <= 1.0))
            throw Error(label, "self-test failed: the engine's output is " + std::to_string(err) +
                                   "× the file's tolerance away from the stored output");
    }
}

inline std::size_t CdmppModel::workspace_floats(std::size_t batch, std::size_t leaves) const {
    const CdmppConfig& c = config_;
    const std::size_t rows = batch * leaves;
    std::size_t encoder = 0;
    for (const auto& layer : encoder_)
        encoder = std::max(encoder, layer.workspace_floats(batch, leaves));
    const std::size_t projection = // encode_projected, for positions past the table
        c.projects_input() ? Workspace::rounded(c.feature_dim) + Workspace::rounded(c.d_model) +
                                 sparse_proj_.workspace_floats()
                           : 0;
    return Workspace::floats_for<std::size_t>(batch) + // leaf counts
           Workspace::floats_for<std::size_t>(rows) +  // tree positions
           Workspace::floats_for<std::uint8_t>(rows) + // key padding
           Workspace::rounded(rows * c.feature_dim) + Workspace::rounded(rows * c.d_model) +
           projection + Workspace::rounded(batch * CdmppConfig::kDeviceFeatures) +
           Workspace::rounded(batch * c.pooled_width()) + encoder + embed_.workspace_floats(batch) +
           device_mlp_.workspace_floats(batch) +
           Workspace::rounded(batch * c.embedding_width()) + // program + device embedding
           decoder_.workspace_floats(batch) + Workspace::rounded(batch);
}

inline void CdmppModel::encode_projected(const CompactAst& ast, float* rows, std::size_t* positions,
                                         Workspace& ws) const {
    const std::size_t d = config_.d_model;
    leaf_positions(ast, positions, name_of(ast));
    for (std::size_t r = 0; r < ast.leaves(); ++r) {
        Workspace::Scope scope(ws);
        const float* base;
        if (positions[r] < kPeTableRows) {
            base = proj_base_.data() + positions[r] * d;
        } else {
            float* pe = ws.take(config_.feature_dim);
            float* row = ws.take(d);
            detail::positional_encoding(positions[r], config_.feature_dim, config_.pe_scale, pe);
            input_proj_.forward(pe, config_.feature_dim, 1, row, d);
            base = row;
        }
        sparse_proj_.forward(ast.leaf(r), base, rows + r * d, ws);
    }
}

inline void CdmppModel::encode(const CompactAst& ast, float* rows, std::size_t* positions) const {
    const std::size_t F = config_.feature_dim;
    leaf_positions(ast, positions, name_of(ast));
    for (std::size_t r = 0; r < ast.leaves(); ++r) {
        float* x = rows + r * F;
        const float* f = ast.leaf(r);
        if (positions[r] < kPeTableRows)
            std::copy_n(pe_table_.data() + positions[r] * F, F, x);
        else
            detail::positional_encoding(positions[r], F, config_.pe_scale, x);
        for (std::size_t i = 0; i < F; ++i) x[i] += (f[i] - norm_min_[i]) * norm_scale_[i];
    }
}

inline void CdmppModel::predict(const CompactAst* const* programs, std::size_t count,
                                double* seconds, Workspace& ws, float* transformed) const {
    if (count == 0) return;
    const CdmppConfig& c = config_;
    std::size_t most_leaves = 0;
    for (std::size_t b = 0; b < count; ++b) {
        validate(*programs[b], name_of(*programs[b]));
        most_leaves = std::max(most_leaves, programs[b]->leaves());
    }
    // Programs go through the network a chunk at a time so that a chunk's activations stay
    // in L2 from layer to layer; a chunk is already tall enough for efficient GEMMs.
    const std::size_t chunk = std::max<std::size_t>(1, kChunkRows / most_leaves);
    ws.reserve(workspace_floats(std::min(count, chunk), most_leaves));
    for (std::size_t first = 0; first < count; first += chunk) {
        const std::size_t n = std::min(chunk, count - first);
        const CompactAst* const* part = programs + first;
        std::size_t seq = 0;
        for (std::size_t b = 0; b < n; ++b) seq = std::max(seq, part[b]->leaves());

        Workspace::Scope scope(ws);
        // Token rows: projected straight from the sparse features when the model projects
        // its input (padding rows are zeros: masked as keys, never pooled).
        const bool project = c.projects_input();
        const std::size_t width = project ? c.d_model : c.feature_dim;
        std::size_t* leaves = ws.take_as<std::size_t>(n);
        std::size_t* positions = ws.take_as<std::size_t>(n * seq);
        float* x = ws.take(n * seq * width);
        float* device = c.device ? ws.take(n * CdmppConfig::kDeviceFeatures) : nullptr;
        float* z = ws.take(n);
        for (std::size_t b = 0; b < n; ++b) {
            const CompactAst& ast = *part[b];
            leaves[b] = ast.leaves();
            float* rows = x + b * seq * width;
            if (project)
                encode_projected(ast, rows, positions + b * seq, ws);
            else
                encode(ast, rows, positions + b * seq);
            std::fill(rows + leaves[b] * width, rows + seq * width, 0.0f);
            if (device)
                std::copy(ast.device.begin(), ast.device.end(),
                          device + b * CdmppConfig::kDeviceFeatures);
        }
        if (project)
            forward_tokens(x, n, seq, leaves, device, z, ws);
        else
            forward(x, n, seq, leaves, device, z, ws);
        for (std::size_t b = 0; b < n; ++b) {
            seconds[first + b] = transform_.seconds(z[b]);
            if (transformed) transformed[first + b] = z[b];
        }
    }
}

inline void CdmppModel::forward(float* x, std::size_t batch, std::size_t seq,
                                const std::size_t* leaves, const float* device, float* z,
                                Workspace& ws) const {
    const CdmppConfig& c = config_;
    if (!c.projects_input()) return forward_tokens(x, batch, seq, leaves, device, z, ws);
    Workspace::Scope scope(ws);
    float* h = ws.take(batch * seq * c.d_model);
    input_proj_.forward(x, c.feature_dim, batch * seq, h, c.d_model);
    forward_tokens(h, batch, seq, leaves, device, z, ws);
}

inline void CdmppModel::forward_tokens(float* h, std::size_t batch, std::size_t seq,
                                       const std::size_t* leaves, const float* device, float* z,
                                       Workspace& ws) const {
    const CdmppConfig& c = config_;
    const std::size_t rows = batch * seq, d = c.d_model;
    Workspace::Scope scope(ws);

    // Keys past a program's leaves are padding; no mask when no program is padded.
    std::uint8_t* padding = ws.take_as<std::uint8_t>(rows);
    bool padded = false;
    for (std::size_t b = 0; b < batch; ++b)
        for (std::size_t r = 0; r < seq; ++r) padded |= (padding[b * seq + r] = r >= leaves[b]);

    for (const auto& layer : encoder_) layer.forward(h, batch, seq, padded ? padding : nullptr, ws);
    if (c.final_norm) final_norm_.forward(h, d, rows, h, d);

    // Pooling: flatten reads the leaf-major rows as one vector per program.
    const float* pooled = h;
    if (c.pooling != CdmppConfig::Pooling::flatten) {
        float* p = ws.take(batch * d);
        for (std::size_t b = 0; b < batch; ++b) {
            float* out = p + b * d;
            std::fill(out, out + d, 0.0f);
            for (std::size_t r = 0; r < leaves[b]; ++r) {
                const float* row = h + (b * seq + r) * d;
                for (std::size_t i = 0; i < d; ++i) out[i] += row[i];
            }
            if (c.pooling == CdmppConfig::Pooling::mean) {
                const float inv = 1.0f / float(leaves[b]);
                for (std::size_t i = 0; i < d; ++i) out[i] *= inv;
            }
        }
        pooled = p;
    }
    const float* e = embed_.forward(pooled, c.pooled_width(), batch, ws);
    const std::size_t width = c.embedding_width();
    if (c.device) {
        // Program and device embeddings share one affine-free BatchNorm, then add.
        const float* g = device_mlp_.forward(device, CdmppConfig::kDeviceFeatures, batch, ws);
        float* sum = ws.take(batch * width);
        for (std::size_t b = 0; b < batch; ++b)
            for (std::size_t i = 0; i < width; ++i)
                sum[b * width + i] = (e[b * width + i] + g[b * width + i]) * shared_scale_[i] +
                                     2.0f * shared_shift_[i];
        e = sum;
    }
    const float* hidden = decoder_.empty() ? e : decoder_.forward(e, width, batch, ws);
    head_.forward(hidden, head_.in_features(), batch, z, 1);
}

inline void CdmppModel::predict_preprocessed(float* x, std::size_t batch, std::size_t seq,
                                             const std::size_t* leaves, const float* device,
                                             float* z, Workspace& ws) const {
    const CdmppConfig& c = config_;
    const std::string where = "predict_preprocessed";
    if (batch == 0) return;
    if (seq == 0 || seq > c.max_leaves ||
        (c.pooling == CdmppConfig::Pooling::flatten && seq != c.max_leaves))
        throw Error(where, "seq " + std::to_string(seq) + " does not fit this model (max_leaves " +
                               std::to_string(c.max_leaves) + ")");
    for (std::size_t b = 0; b < batch; ++b)
        if (leaves[b] == 0 || leaves[b] > seq ||
            (c.pooling == CdmppConfig::Pooling::flatten && leaves[b] != seq))
            throw Error(where, "leaves[" + std::to_string(b) + "] = " + std::to_string(leaves[b]) +
                                   " for seq " + std::to_string(seq));
    if (c.device != (device != nullptr))
        throw Error(where, c.device ? "this model needs device features"
                                    : "this model has no device branch (device must be null)");
    ws.reserve(workspace_floats(batch, seq));
    forward(x, batch, seq, leaves, device, z, ws);
}

inline double CdmppModel::selftest_error() const {
    if (!has_selftest()) throw Error("selftest", "this model file carries no self-test");
    const CdmppConfig& c = config_;
    const std::size_t B = selftest_.count, L = c.max_leaves;
    Workspace ws;
    ws.reserve(workspace_floats(B, L));
    std::size_t* leaves = ws.take_as<std::size_t>(B);
    float* x = ws.take(B * L * c.feature_dim);
    float* z = ws.take(B);
    std::copy(selftest_.input.begin(), selftest_.input.end(), x);
    for (std::size_t b = 0; b < B; ++b) {
        leaves[b] = 0;
        for (std::size_t r = 0; r < L; ++r) leaves[b] += selftest_.mask[b * L + r] != 0.0f;
    }
    forward(x, B, L, leaves, c.device ? selftest_.device.data() : nullptr, z, ws);
    double worst = 0.0;
    for (std::size_t b = 0; b < B; ++b) {
        const double want = selftest_.output[b];
        worst = std::max(worst, std::abs(z[b] - want) /
                                    (selftest_.atol + selftest_.rtol * std::abs(want)));
        if (!std::isfinite(z[b])) worst = INFINITY;
    }
    return worst;
}

} // namespace tempo
