// The stage graph of a lowered program, for graph models: one node per computed tensor (its
// stores' feature rows summed, as CDMPP's per-program "ansor" mode sums rows), one edge per
// producer → consumer read.
#pragma once

#include "tempo/io/json.hpp"
#include "tempo/loopnest/featurize.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace tempo::loopnest {

struct StageNode {
    std::string name;
    int tensor = -1;
    int stores = 0;
    std::vector<float> features; // kFeatureDim
};

struct StageGraph {
    std::vector<StageNode> nodes;
    std::vector<std::pair<int, int>> edges; // producer node → consumer node
};

inline StageGraph stage_graph(const LoweredProgram& p, const CompactAst& ast) {
    std::vector<const LoopNode*> stores;
    std::vector<const LoopNode*> stack{&p.root};
    while (!stack.empty()) { // pre-order, as the AST's leaves
        const LoopNode* n = stack.back();
        stack.pop_back();
        if (n->kind == NodeKind::Store) stores.push_back(n);
        for (auto it = n->children.rbegin(); it != n->children.rend(); ++it) stack.push_back(&*it);
    }
    StageGraph g;
    auto node_of = [&](int tensor) {
        for (std::size_t i = 0; i < g.nodes.size(); ++i)
            if (g.nodes[i].tensor == tensor) return static_cast<int>(i);
        return -1;
    };
    for (std::size_t leaf = 0; leaf < stores.size(); ++leaf) {
        int id = node_of(stores[leaf]->tensor);
        if (id < 0) {
            g.nodes.push_back(StageNode{p.tensors[stores[leaf]->tensor].name, stores[leaf]->tensor,
                                        0, std::vector<float>(ast.feature_dim, 0.0f)});
            id = static_cast<int>(g.nodes.size()) - 1;
        }
        g.nodes[id].stores++;
        for (std::size_t f = 0; f < ast.feature_dim; ++f)
            g.nodes[id].features[f] += ast.leaf(leaf)[f];
    }
    for (const LoopNode* s : stores) {
        const int consumer = node_of(s->tensor);
        visit_preorder(s->value, [&](const ExprNode& e) {
            if (e.kind != ExprKind::Load) return;
            const int producer = node_of(static_cast<int>(e.int_value));
            if (producer < 0 || producer == consumer) return;
            std::pair<int, int> edge{producer, consumer};
            if (std::find(g.edges.begin(), g.edges.end(), edge) == g.edges.end())
                g.edges.push_back(edge);
        });
    }
    return g;
}

inline json::Value stage_graph_to_json(const StageGraph& g) {
    json::Value::Array nodes, edges;
    for (const StageNode& n : g.nodes) {
        json::Value::Array f;
        for (float x : n.features) f.emplace_back(static_cast<double>(x));
        nodes.emplace_back(
            json::Value::Object{{"name", n.name}, {"stores", n.stores}, {"features", f}});
    }
    for (const auto& [a, b] : g.edges) edges.emplace_back(json::Value::Array{a, b});
    return json::Value::Object{{"nodes", nodes}, {"edges", edges}};
}

} // namespace tempo::loopnest
