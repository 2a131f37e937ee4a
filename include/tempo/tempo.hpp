// tempo — latency predictors for tensor programs, header-only.
//
//   #include <tempo/tempo.hpp>
//   auto model = tempo::CdmppModel::load("weights/compact.safetensors");
//   tempo::Workspace ws;                                   // one per thread
//   double seconds = model.predict(program, ws);           // program: tempo::CompactAst
#pragma once

#include "tempo/core/backend.hpp"
#include "tempo/core/error.hpp"
#include "tempo/core/workspace.hpp"
#include "tempo/models/cdmpp_model.hpp"
#include "tempo/program/compact_ast.hpp"
#include "tempo/program/feature_set.hpp"
#include "tempo/program/jsonl.hpp"
#include "tempo/program/validate.hpp"
