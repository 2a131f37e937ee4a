// tempo::io::SafeTensors — a strict reader of safetensors files into immutable F32 tensors.
//
// Format: u64 little-endian header length N, N bytes of UTF-8 JSON header, then the data
// buffer. The header maps tensor names to {"dtype", "shape", "data_offsets": [begin, end]}
// (offsets relative to the buffer) and may hold "__metadata__": {string: string}.
//
// The reader checks everything the reference implementation (the Rust `safetensors` crate)
// checks, and more: no unknown fields, no duplicate keys, offsets that tile the buffer with
// neither holes nor overlaps nor trailing bytes. Every header claim is checked against the
// bytes really present before anything is allocated for it, so a hostile file cannot make the
// reader allocate more than twice its own size (F16 and BF16 widen to F32). Every failure
// throws tempo::Error naming the file, the tensor where there is one, and the reason.
#pragma once

#include "tempo/core/aligned_buffer.hpp"
#include "tempo/core/error.hpp"
#include "tempo/io/json.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tempo::io {

// The header-length cap of the reference implementation.
inline constexpr std::uint64_t kMaxSafetensorsHeader = 100'000'000;

namespace detail {

inline std::string shape_text(const std::vector<std::size_t>& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(shape[i]);
    }
    return s + "]";
}

// The dtypes tempo reads, with their size, and the format's other dtypes, which it rejects
// as unsupported (not unknown) so the message says what is wrong.
struct Dtype {
    std::string_view name;
    unsigned bytes;
};
inline constexpr Dtype kReadableDtypes[] = {{"F32", 4}, {"F16", 2}, {"BF16", 2}};
inline constexpr std::string_view kOtherDtypes[] = {
    "F64",         "C64",         "I64",     "U64",     "I32",     "U32",     "I16",
    "U16",         "I8",          "U8",      "BOOL",    "F8_E5M2", "F8_E4M3", "F8_E8M0",
    "F8_E4M3FNUZ", "F8_E5M2FNUZ", "F6_E2M3", "F6_E3M2", "F4"};

inline std::uint32_t load_le32(const unsigned char* p) noexcept {
    return std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 |
           std::uint32_t{p[3]} << 24;
}
inline std::uint16_t load_le16(const unsigned char* p) noexcept {
    return static_cast<std::uint16_t>(p[0] | p[1] << 8);
}
inline float float_from_bits(std::uint32_t bits) noexcept {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

// IEEE binary16 to binary32, exact for every input including subnormals, infinities and NaN.
inline float half_to_float(std::uint16_t h) noexcept {
    std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16;
    std::uint32_t exponent = (h >> 10) & 0x1Fu;
    std::uint32_t mantissa = h & 0x3FFu;
    if (exponent == 0) {
        // Zero or subnormal: mantissa × 2^-24 is exact in binary32.
        float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
        return sign ? -magnitude : magnitude;
    }
    if (exponent == 31) return float_from_bits(sign | 0x7F800000u | mantissa << 13);
    return float_from_bits(sign | (exponent + 112) << 23 | mantissa << 13);
}

} // namespace detail

// One tensor of a file, converted to F32; immutable.
class Tensor {
public:
    const std::string& name() const noexcept { return name_; }
    // The dtype the file stored it in ("F32", "F16" or "BF16").
    std::string_view dtype() const noexcept { return dtype_; }
    const std::vector<std::size_t>& shape() const noexcept { return shape_; }
    std::size_t rank() const noexcept { return shape_.size(); }
    std::size_t numel() const noexcept { return values_.size(); }
    // numel() floats, row-major, 64-byte aligned (nullptr when numel() is 0).
    const float* data() const noexcept { return values_.data(); }
    const float* begin() const noexcept { return values_.begin(); }
    const float* end() const noexcept { return values_.end(); }

    // Throws `file: tensor "x": expected shape [3, 4], file has [4, 3]` unless the shapes match.
    const Tensor& expect_shape(const std::vector<std::size_t>& expected) const {
        if (expected != shape_)
            throw Error(file_, "tensor " + json::quote(name_) + ": expected shape " +
                                   detail::shape_text(expected) + ", file has " +
                                   detail::shape_text(shape_));
        return *this;
    }

private:
    friend class SafeTensors;
    std::string file_;
    std::string name_;
    std::string_view dtype_;
    std::vector<std::size_t> shape_;
    AlignedBuffer<float> values_;
};

class SafeTensors {
public:
    using Metadata = std::map<std::string, std::string, std::less<>>;

    // Reads the whole file at `path`; errors name the path.
    static SafeTensors load(const std::string& path) {
        std::FILE* f = std::fopen(path.c_str(), "rb");
        if (!f) throw Error(path, std::string("cannot open: ") + std::strerror(errno));
        std::string bytes;
        // Reading in chunks to EOF trusts no size claim, not even the file system's.
        char chunk[1 << 16];
        std::size_t got;
        while ((got = std::fread(chunk, 1, sizeof chunk, f)) > 0) bytes.append(chunk, got);
        bool failed = std::ferror(f) != 0;
        int err = errno;
        std::fclose(f);
        if (failed) throw Error(path, std::string("cannot read: ") + std::strerror(err));
        return parse(bytes, path);
    }

    // Parses a whole file held in memory; `label` names it in errors.
    static SafeTensors parse(std::string_view bytes, std::string label) {
        SafeTensors st;
        st.label_ = std::move(label);
        st.read(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
        return st;
    }
    static SafeTensors parse(const void* data, std::size_t size, std::string label) {
        return parse(std::string_view(static_cast<const char*>(data), size), std::move(label));
    }

    const std::string& label() const noexcept { return label_; }
    std::size_t size() const noexcept { return tensors_.size(); }
    bool has(std::string_view name) const { return tensors_.find(name) != tensors_.end(); }

    // The tensor called `name`; throws `file: no tensor "name"` when there is none.
    const Tensor& tensor(std::string_view name) const {
        auto it = tensors_.find(name);
        if (it == tensors_.end()) throw Error(label_, "no tensor " + json::quote(name));
        return it->second;
    }
    // The tensor called `name`, which must have exactly `shape`.
    const Tensor& tensor(std::string_view name, const std::vector<std::size_t>& shape) const {
        return tensor(name).expect_shape(shape);
    }

    // Tensor names in sorted order.
    std::vector<std::string> names() const {
        std::vector<std::string> out;
        out.reserve(tensors_.size());
        for (const auto& kv : tensors_) out.push_back(kv.first);
        return out;
    }

    const Metadata& metadata() const noexcept { return metadata_; }
    bool has_metadata(std::string_view key) const { return metadata_.find(key) != metadata_.end(); }
    // The `__metadata__` value of `key`; throws `file: no metadata "key"` when absent.
    const std::string& metadata(std::string_view key) const {
        auto it = metadata_.find(key);
        if (it == metadata_.end()) throw Error(label_, "no metadata " + json::quote(key));
        return it->second;
    }

private:
    struct Entry {
        const std::string* name;
        const detail::Dtype* dtype;
        std::vector<std::size_t> shape;
        std::uint64_t numel;
        std::uint64_t begin, end;
    };

    [[noreturn]] void fail(std::string reason) const { throw Error(label_, std::move(reason)); }

    static std::string offsets_text(const Entry& e) {
        return "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "]";
    }

    void read(const unsigned char* data, std::size_t size) {
        if (size < 8)
            fail("file too short (" + std::to_string(size) +
                 " bytes) to hold the 8-byte header length");
        std::uint64_t n = std::uint64_t{detail::load_le32(data)} |
                          std::uint64_t{detail::load_le32(data + 4)} << 32;
        if (n > kMaxSafetensorsHeader)
            fail("header length " + std::to_string(n) + " exceeds the limit of " +
                 std::to_string(kMaxSafetensorsHeader) + " bytes");
        if (n > size - 8)
            fail("header length " + std::to_string(n) + " runs past the end of the file (" +
                 std::to_string(size) + " bytes)");
        std::string_view header(reinterpret_cast<const char*>(data + 8), n);
        std::size_t bad = json::utf8_error_offset(header);
        if (bad != std::string_view::npos)
            fail("header is not valid UTF-8 (byte " + std::to_string(bad) + " of the header)");
        if (header.empty() || header[0] != '{') fail("header does not start with '{'");

        const json::Value doc = json::parse(header, label_ + ": header");
        const std::uint64_t buffer_size = size - 8 - n;
        std::vector<Entry> entries;
        for (const json::Member& m : doc.as_object(label_ + ": header")) {
            if (m.key == "__metadata__") {
                read_metadata(m.value);
            } else {
                entries.push_back(read_entry(m, buffer_size));
            }
        }
        check_tiling(entries, buffer_size);

        // Only now, with every claim checked against the buffer, allocate and convert.
        const unsigned char* buffer = data + 8 + n;
        for (const Entry& e : entries) {
            Tensor t;
            t.file_ = label_;
            t.name_ = *e.name;
            t.dtype_ = e.dtype->name;
            t.shape_ = e.shape;
            t.values_ = AlignedBuffer<float>(static_cast<std::size_t>(e.numel));
            convert(e, buffer + e.begin, t.values_.data());
            tensors_.emplace(*e.name, std::move(t));
        }
    }

    void read_metadata(const json::Value& value) {
        json::Node node(value, label_ + ": __metadata__");
        for (const json::Member& m : node.as_object())
            metadata_.emplace(m.key, node.child(m).as_string());
    }

    Entry read_entry(const json::Member& m, std::uint64_t buffer_size) const {
        const json::Node node(m.value, label_ + ": tensor " + json::quote(m.key));
        node.only_keys({"dtype", "shape", "data_offsets"});
        Entry e{&m.key, nullptr, {}, 1, 0, 0};

        const std::string& dtype = node["dtype"].as_string();
        for (const detail::Dtype& d : detail::kReadableDtypes)
            if (d.name == dtype) e.dtype = &d;
        if (!e.dtype) {
            for (std::string_view other : detail::kOtherDtypes)
                if (other == dtype)
                    node.fail("unsupported dtype " + json::quote(dtype) +
                              " (tempo reads F32, F16 and BF16)");
            node.fail("unknown dtype " + json::quote(dtype));
        }

        const json::Node shape = node["shape"];
        const std::size_t rank = shape.as_array().size();
        bool overflow = false;
        for (std::size_t i = 0; i < rank; ++i) {
            std::uint64_t dim = shape[i].as_uint64();
            // The element count is checked in file order, as the reference does.
            if (dim != 0 && e.numel > std::numeric_limits<std::uint64_t>::max() / dim)
                overflow = true;
            if (!overflow) e.numel *= dim;
            if (dim > std::numeric_limits<std::size_t>::max()) overflow = true;
            e.shape.push_back(static_cast<std::size_t>(dim));
        }
        const std::uint64_t bytes_per = e.dtype->bytes;
        if (overflow || e.numel > std::numeric_limits<std::uint64_t>::max() / bytes_per)
            node.fail("shape " + detail::shape_text(e.shape) + " overflows the element count");

        const json::Node offsets = node["data_offsets"];
        offsets.as_array(2);
        e.begin = offsets[0].as_uint64();
        e.end = offsets[1].as_uint64();
        if (e.begin > e.end) node.fail(offsets_text(e) + ": begin is after end");
        if (e.end > buffer_size)
            node.fail(offsets_text(e) + " run past the end of the data buffer (" +
                      std::to_string(buffer_size) + " bytes)");
        if (e.numel * bytes_per != e.end - e.begin)
            node.fail("shape " + detail::shape_text(e.shape) + " of " + dtype + " needs " +
                      std::to_string(e.numel * bytes_per) + " bytes, " + offsets_text(e) +
                      " hold " + std::to_string(e.end - e.begin));
        return e;
    }

    // Sorted by offset, tensors must start at 0, follow each other without holes or overlaps,
    // and end exactly at the end of the buffer.
    void check_tiling(std::vector<Entry>& entries, std::uint64_t buffer_size) const {
        std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
            return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
        });
        std::uint64_t cursor = 0;
        const Entry* previous = nullptr;
        for (const Entry& e : entries) {
            if (e.begin > cursor)
                fail("hole in the data buffer: bytes [" + std::to_string(cursor) + ", " +
                     std::to_string(e.begin) + ") belong to no tensor (before tensor " +
                     json::quote(*e.name) + ")");
            if (e.begin < cursor)
                fail("tensor " + json::quote(*e.name) + ": " + offsets_text(e) +
                     " overlap tensor " + json::quote(*previous->name) + " (" +
                     offsets_text(*previous) + ")");
            cursor = e.end;
            previous = &e;
        }
        if (cursor != buffer_size)
            fail("trailing bytes: the data buffer has " + std::to_string(buffer_size) +
                 " bytes, tensors cover " + std::to_string(cursor));
    }

    static void convert(const Entry& e, const unsigned char* src, float* dst) {
        const std::size_t count = static_cast<std::size_t>(e.numel);
        const std::string_view dtype = e.dtype->name;
        // Decoding bytes explicitly is endian-independent and needs no source alignment.
        if (dtype == "F32") {
            for (std::size_t i = 0; i < count; ++i)
                dst[i] = detail::float_from_bits(detail::load_le32(src + 4 * i));
        } else if (dtype == "F16") {
            for (std::size_t i = 0; i < count; ++i)
                dst[i] = detail::half_to_float(detail::load_le16(src + 2 * i));
        } else { // BF16 is the upper half of an F32
            for (std::size_t i = 0; i < count; ++i)
                dst[i] =
                    detail::float_from_bits(std::uint32_t{detail::load_le16(src + 2 * i)} << 16);
        }
    }

    std::string label_;
    std::map<std::string, Tensor, std::less<>> tensors_;
    Metadata metadata_;
};

} // namespace tempo::io
