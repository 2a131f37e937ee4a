// The one backend switch. Build with -DTEMPO_BACKEND_XSIMD (default), -DTEMPO_BACKEND_EIGEN
// or -DTEMPO_BACKEND_SCALAR (CMake: -DTEMPO_BACKEND=xsimd|eigen|scalar). Layers call
// `kernels::active::…`; every backend namespace offers the same functions and types.
#pragma once

#if defined(TEMPO_BACKEND_EIGEN) + defined(TEMPO_BACKEND_SCALAR) + defined(TEMPO_BACKEND_XSIMD) > 1
#error "define at most one of TEMPO_BACKEND_XSIMD, TEMPO_BACKEND_EIGEN, TEMPO_BACKEND_SCALAR"
#endif
#if !defined(TEMPO_BACKEND_EIGEN) && !defined(TEMPO_BACKEND_SCALAR) && !defined(TEMPO_BACKEND_XSIMD)
#define TEMPO_BACKEND_XSIMD
#endif

namespace tempo {
enum class Backend { xsimd, eigen, scalar };

#if defined(TEMPO_BACKEND_EIGEN)
inline constexpr Backend kBackend = Backend::eigen;
inline constexpr const char* kBackendName = "eigen";
#elif defined(TEMPO_BACKEND_SCALAR)
inline constexpr Backend kBackend = Backend::scalar;
inline constexpr const char* kBackendName = "scalar";
#else
inline constexpr Backend kBackend = Backend::xsimd;
inline constexpr const char* kBackendName = "xsimd";
#endif
} // namespace tempo
