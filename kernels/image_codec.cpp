// Family `pipeline`, the stored form: synthetic images, then the encoder (set-up only), then the
// decoder the producer runs. The format is described in image_codec.h. The images themselves are
// the decoder's reference: the codec is lossless, so a decoded image must equal its original
// byte for byte.
#include "kernels/image_codec.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/base/data.h"  // element_hash only (inline, header-only)

namespace gapbench::codec {

namespace {

// Shared by the encoder and the decoder, so the two can never disagree on a prediction.
inline int med(int a, int b, int c) {
  const int hi = std::max(a, b), lo = std::min(a, b);
  if (c >= hi) return lo;
  if (c <= lo) return hi;
  return a + b - c;
}

// Prediction of element k (= x * c + ch) of row y, from the decoded rows; `cur` is row y, `up`
// row y - 1 (unused on row 0).
inline int predict(const std::uint8_t* cur, const std::uint8_t* up, std::size_t y, std::size_t k,
                   std::size_t c) {
  if (y == 0) return k >= c ? cur[k - c] : 0;
  if (k < c) return up[k];
  return med(cur[k - c], up[k], up[k - c]);
}

inline unsigned zigzag(int residual) {  // [-128, 127] -> [0, 255]
  return residual >= 0 ? 2u * static_cast<unsigned>(residual)
                       : 2u * static_cast<unsigned>(-residual) - 1u;
}

inline int unzigzag(unsigned u) { return static_cast<int>(u >> 1) ^ -static_cast<int>(u & 1u); }

// value - prediction, wrapped into [-128, 127] (so every byte has a residual).
inline int residual_of(int value, int prediction) {
  return static_cast<std::int8_t>(static_cast<std::uint8_t>(value - prediction));
}

inline unsigned code_bits(unsigned u, unsigned k) {
  const unsigned q = u >> k;
  return q < kEscapeZeros ? q + 1 + k : kEscapeZeros + 8;
}

class BitWriter {
 public:
  explicit BitWriter(std::vector<std::uint8_t>& out) : out_(out) {}
  // Appends the low `count` (<= 32) bits of `bits`, most significant first.
  void put(std::uint32_t bits, unsigned count) {
    acc_ = (acc_ << count) | bits;
    pending_ += count;
    while (pending_ >= 8) {
      pending_ -= 8;
      out_.push_back(static_cast<std::uint8_t>(acc_ >> pending_));
    }
  }
  void flush() {
    if (pending_ > 0) out_.push_back(static_cast<std::uint8_t>(acc_ << (8 - pending_)));
    pending_ = 0;
  }

 private:
  std::vector<std::uint8_t>& out_;
  std::uint64_t acc_ = 0;  // only its low `pending_` bits are still to be written
  unsigned pending_ = 0;
};

void put_symbol(BitWriter& bits, unsigned u, unsigned k) {
  const unsigned q = u >> k;
  if (q < kEscapeZeros) {
    bits.put(0, q);
    bits.put(1, 1);
    bits.put(u & ((1u << k) - 1u), k);
  } else {
    bits.put(0, kEscapeZeros);
    bits.put(u, 8);
  }
}

// Reads symbols MSB-first; the next unread bit is the top bit of `buf_`, and only its top
// `bits_` bits are valid (the rest are zero).
class BitReader {
 public:
  BitReader(const std::uint8_t* begin, const std::uint8_t* end, std::size_t image)
      : p_(begin), end_(end), image_(image) {}

  unsigned symbol(unsigned k) {
    // The longest code is 32 bits; after a refill there are at least 57 unless the stream ends.
    while (bits_ <= 56 && p_ < end_) {
      buf_ |= static_cast<std::uint64_t>(*p_++) << (56 - bits_);
      bits_ += 8;
    }
    const unsigned zeros = buf_ == 0 ? 64u : static_cast<unsigned>(__builtin_clzll(buf_));
    unsigned u, length;
    if (zeros < kEscapeZeros) {
      length = zeros + 1 + k;
      u = (zeros << k) | (k > 0 ? static_cast<unsigned>((buf_ << (zeros + 1)) >> (64 - k)) : 0u);
    } else {
      length = kEscapeZeros + 8;
      u = static_cast<unsigned>(buf_ >> (64 - length)) & 0xFFu;
    }
    // Zero padding past the end reads as zeros: a code longer than the valid bits is truncation.
    if (length > bits_) {
      throw std::invalid_argument("decode: image " + std::to_string(image_) +
                                  "'s stream ends early");
    }
    buf_ <<= length;
    bits_ -= length;
    return u;
  }

 private:
  const std::uint8_t* p_;
  const std::uint8_t* end_;
  std::uint64_t buf_ = 0;
  unsigned bits_ = 0;
  std::size_t image_;
};

// Seeded parameters of one synthetic image.
struct Draw {
  std::uint64_t seed, image, n = 0;
  std::uint64_t next() { return element_hash(seed, image, n++); }
  // Uniform in [lo, hi].
  long range(long lo, long hi) {
    return lo + static_cast<long>(next() % static_cast<std::uint64_t>(hi - lo + 1));
  }
};

}  // namespace

double EncodedImages::ratio() const {
  const double raw = static_cast<double>(count() * format.bytes());
  return raw > 0.0 ? static_cast<double>(bytes.size()) / raw : 0.0;
}

std::vector<std::uint8_t> synthetic_images(std::size_t count, ImageFormat f, std::uint64_t seed) {
  std::vector<std::uint8_t> out(count * f.bytes());
  const long h = static_cast<long>(f.h), w = static_cast<long>(f.w);
  if (f.bytes() == 0) return out;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint8_t* img = out.data() + i * f.bytes();
    Draw draw{seed, i};
    // A lit plane per channel (gradients in 1/16 steps, so residuals are small, not all zero).
    std::vector<long> base(f.c), gx(f.c), gy(f.c);
    for (std::size_t ch = 0; ch < f.c; ++ch) {
      base[ch] = draw.range(40, 215) * 16;
      gx[ch] = draw.range(-40, 40);
      gy[ch] = draw.range(-40, 40);
    }
    for (long y = 0; y < h; ++y)
      for (long x = 0; x < w; ++x)
        for (std::size_t ch = 0; ch < f.c; ++ch) {
          const long v = (base[ch] + gx[ch] * x + gy[ch] * y) / 16;
          img[(y * w + x) * f.c + ch] = static_cast<std::uint8_t>(std::clamp(v, 0L, 255L));
        }
    // Flat rectangles (objects), then one patch of noise (texture the predictor cannot guess).
    for (int r = 0; r <= 3; ++r) {
      const long x0 = draw.range(0, w - 1), y0 = draw.range(0, h - 1);
      const long x1 = std::min(w, x0 + draw.range(1, std::max(1L, w / 2)));
      const long y1 = std::min(h, y0 + draw.range(1, std::max(1L, h / 2)));
      const bool noise = r == 3;
      std::vector<std::uint8_t> colour(f.c);
      for (auto& v : colour) v = static_cast<std::uint8_t>(draw.next() >> 56);
      for (long y = y0; y < y1; ++y)
        for (long x = x0; x < x1; ++x)
          for (std::size_t ch = 0; ch < f.c; ++ch) {
            img[(y * w + x) * f.c + ch] =
                noise ? static_cast<std::uint8_t>(draw.next() >> 56) : colour[ch];
          }
    }
  }
  return out;
}

EncodedImages encode(const std::uint8_t* pixels, std::size_t count, ImageFormat f) {
  EncodedImages enc;
  enc.format = f;
  enc.offsets.push_back(0);
  const std::size_t row = f.w * f.c;
  std::vector<unsigned> symbols(f.bytes());
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint8_t* img = pixels + i * f.bytes();
    for (std::size_t y = 0; y < f.h; ++y) {
      const std::uint8_t* cur = img + y * row;
      const std::uint8_t* up = y > 0 ? cur - row : cur;
      for (std::size_t k = 0; k < row; ++k) {
        symbols[y * row + k] = zigzag(residual_of(cur[k], predict(cur, up, y, k, f.c)));
      }
    }
    unsigned best_k = 0;
    std::size_t best_bits = SIZE_MAX;
    for (unsigned k = 0; k <= kMaxRiceK; ++k) {
      std::size_t total = 0;
      for (unsigned u : symbols) total += code_bits(u, k);
      if (total < best_bits) best_bits = total, best_k = k;
    }
    enc.bytes.push_back(static_cast<std::uint8_t>(best_k));
    BitWriter bits(enc.bytes);
    for (unsigned u : symbols) put_symbol(bits, u, best_k);
    bits.flush();
    enc.offsets.push_back(enc.bytes.size());
  }
  return enc;
}

void decode(const EncodedImages& images, std::size_t index, std::uint8_t* out) {
  if (index >= images.count()) {
    throw std::invalid_argument("decode: image " + std::to_string(index) + " of " +
                                std::to_string(images.count()));
  }
  const std::size_t begin = images.offsets[index], end = images.offsets[index + 1];
  if (begin >= end || end > images.bytes.size()) {
    throw std::invalid_argument("decode: image " + std::to_string(index) + " has no stream");
  }
  const unsigned rice = images.bytes[begin];
  if (rice > kMaxRiceK) {
    throw std::invalid_argument("decode: image " + std::to_string(index) + " has Rice parameter " +
                                std::to_string(rice) + " (at most " + std::to_string(kMaxRiceK) +
                                ")");
  }
  BitReader bits(images.bytes.data() + begin + 1, images.bytes.data() + end, index);
  const ImageFormat& f = images.format;
  const std::size_t row = f.w * f.c, c = f.c;
  const std::size_t first = std::min(c, row);  // elements of a row's first pixel
  auto next = [&](int prediction) {
    return static_cast<std::uint8_t>(prediction + unzigzag(bits.symbol(rice)));
  };
  // predict()'s three cases as separate loops: no per-element branch on the position.
  for (std::size_t y = 0; y < f.h; ++y) {
    std::uint8_t* cur = out + y * row;
    if (y == 0) {
      for (std::size_t k = 0; k < first; ++k) cur[k] = next(0);
      for (std::size_t k = first; k < row; ++k) cur[k] = next(cur[k - c]);
    } else {
      const std::uint8_t* up = cur - row;
      for (std::size_t k = 0; k < first; ++k) cur[k] = next(up[k]);
      for (std::size_t k = first; k < row; ++k) cur[k] = next(med(cur[k - c], up[k], up[k - c]));
    }
  }
}

}  // namespace gapbench::codec
