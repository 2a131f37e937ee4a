// Which columns a compact AST's feature rows hold. A model file names the set it was trained
// on (`tempo.config.features`), so whoever featurizes programs for it knows what to produce.
//   ansor        Ansor's 164 per-store features (Tenset's dialect), CDMPP's input
//   ansor+loops  those, then tempo's 10 loop-extension columns (loopnest/featurize.hpp)
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "tempo/core/error.hpp"

namespace tempo {

enum class FeatureSet : std::uint8_t { ansor, ansor_loops };

inline constexpr std::size_t kAnsorFeatureDim = 164;
inline constexpr std::size_t kLoopExtensionDim = 10;

inline std::size_t feature_dim(FeatureSet set) noexcept {
    return set == FeatureSet::ansor ? kAnsorFeatureDim : kAnsorFeatureDim + kLoopExtensionDim;
}

inline const char* feature_set_name(FeatureSet set) noexcept {
    return set == FeatureSet::ansor ? "ansor" : "ansor+loops";
}

inline std::optional<FeatureSet> find_feature_set(const std::string& name) noexcept {
    for (FeatureSet set : {FeatureSet::ansor, FeatureSet::ansor_loops})
        if (name == feature_set_name(set)) return set;
    return std::nullopt;
}

inline std::string unknown_feature_set(const std::string& name) {
    return "unknown feature set \"" + name + "\" (known: ansor, ansor+loops)";
}

inline FeatureSet feature_set_from_name(const std::string& name, const std::string& where) {
    if (auto set = find_feature_set(name)) return *set;
    throw Error(where, unknown_feature_set(name));
}

} // namespace tempo
