// AlignedBuffer — an owning, cache-line aligned array of trivially copyable values.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace tempo {

inline constexpr std::size_t kAlignment = 64; // one cache line, also an AVX-512 vector

template <typename T>
class AlignedBuffer {
    static_assert(std::is_trivially_copyable_v<T>, "AlignedBuffer holds plain values");

public:
    AlignedBuffer() = default;
    explicit AlignedBuffer(std::size_t n) : size_(n) {
        if (n == 0) return;
        std::size_t bytes = (n * sizeof(T) + kAlignment - 1) / kAlignment * kAlignment;
        data_ = static_cast<T*>(std::aligned_alloc(kAlignment, bytes));
        if (!data_) throw std::bad_alloc();
        std::memset(static_cast<void*>(data_), 0, bytes);
    }
    AlignedBuffer(const AlignedBuffer& other) : AlignedBuffer(other.size_) {
        if (size_) std::memcpy(static_cast<void*>(data_), other.data_, size_ * sizeof(T));
    }
    AlignedBuffer(AlignedBuffer&& other) noexcept
        : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
    AlignedBuffer& operator=(AlignedBuffer other) noexcept {
        std::swap(data_, other.data_);
        std::swap(size_, other.size_);
        return *this;
    }
    ~AlignedBuffer() { std::free(data_); }

    T* data() noexcept { return data_; }
    const T* data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }
    T& operator[](std::size_t i) noexcept { return data_[i]; }
    const T& operator[](std::size_t i) const noexcept { return data_[i]; }
    T* begin() noexcept { return data_; }
    T* end() noexcept { return data_ + size_; }
    const T* begin() const noexcept { return data_; }
    const T* end() const noexcept { return data_ + size_; }

private:
    T* data_ = nullptr;
    std::size_t size_ = 0;
};

} // namespace tempo
