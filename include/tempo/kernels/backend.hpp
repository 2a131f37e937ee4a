// Every backend's kernels, and `kernels::active`, the one chosen by TEMPO_BACKEND
// (core/backend.hpp). Each backend namespace offers the same API:
//   PackedWeights(w, n, k); gemm(x, ldx, m, packed, epilogue, y, ldy);
//   activate(act, x, n); layer_norm(…); softmax(…); attention(shape, qkv, …);
//   sparse_rows_sum(base, index, value, count, rows, ld, y, n).
#pragma once

#include "tempo/core/backend.hpp"
#include "tempo/kernels/attention.hpp"
#include "tempo/kernels/eigen/attention.hpp"
#include "tempo/kernels/eigen/elementwise.hpp"
#include "tempo/kernels/eigen/gemm.hpp"
#include "tempo/kernels/eigen/sparse_rows.hpp"
#include "tempo/kernels/elementwise.hpp"
#include "tempo/kernels/gemm.hpp"
#include "tempo/kernels/reference/attention.hpp"
#include "tempo/kernels/reference/elementwise.hpp"
#include "tempo/kernels/reference/gemm.hpp"
#include "tempo/kernels/reference/sparse_rows.hpp"
#include "tempo/kernels/sparse_rows.hpp"

namespace tempo::kernels {
#if defined(TEMPO_BACKEND_EIGEN)
namespace active = eigen;
#elif defined(TEMPO_BACKEND_SCALAR)
namespace active = reference;
#else
namespace active = simd;
#endif
} // namespace tempo::kernels
