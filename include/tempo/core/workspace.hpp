// Workspace — caller-owned scratch memory for one thread's predictions.
//
// A model asks for the floats a call needs (`reserve`), which allocates only when the
// workspace has never seen a call that large; it then carves aligned slices with `take`.
// After warm-up with the largest batch, prediction therefore never touches the heap.
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>

#include "tempo/core/aligned_buffer.hpp"
#include "tempo/core/error.hpp"

namespace tempo {

class Workspace {
public:
    // Slices are rounded up to whole cache lines so each one starts aligned.
    static constexpr std::size_t kSliceFloats = kAlignment / sizeof(float);

    static constexpr std::size_t rounded(std::size_t floats) {
        return (floats + kSliceFloats - 1) / kSliceFloats * kSliceFloats;
    }

    // Makes room for `floats` floats (as a sum of `rounded` slices) and forgets old slices.
    void reserve(std::size_t floats) {
        if (floats > buffer_.size()) buffer_ = AlignedBuffer<float>(floats);
        used_ = 0;
    }

    float* take(std::size_t floats) {
        std::size_t n = rounded(floats);
        if (n > buffer_.size() - used_)
            throw Error("workspace", "slice of " + std::to_string(floats) +
                                         " floats exceeds the reserved " +
                                         std::to_string(buffer_.size()) + " (a model bug)");
        float* p = buffer_.data() + used_;
        used_ += n;
        return p;
    }

    // A slice for `count` values of another plain type (counts, masks), still aligned.
    template <typename T>
    T* take_as(std::size_t count) {
        static_assert(alignof(T) <= kAlignment && std::is_trivially_copyable_v<T>);
        return reinterpret_cast<T*>(take(floats_for<T>(count)));
    }
    template <typename T>
    static constexpr std::size_t floats_for(std::size_t count) {
        return rounded((count * sizeof(T) + sizeof(float) - 1) / sizeof(float));
    }

    std::size_t capacity() const noexcept { return buffer_.size(); }

    // Slices taken while a Scope lives are given back when it ends, so a layer's temporaries
    // reuse the same floats on every call.
    class Scope {
    public:
        explicit Scope(Workspace& ws) noexcept : ws_(ws), mark_(ws.used_) {}
        ~Scope() { ws_.used_ = mark_; }
        Scope(const Scope&) = delete;
        Scope& operator=(const Scope&) = delete;

    private:
        Workspace& ws_;
        std::size_t mark_;
    };

private:
    AlignedBuffer<float> buffer_;
    std::size_t used_ = 0;
};

} // namespace tempo
