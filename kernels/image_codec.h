// Family `pipeline`: the stored form the producer decodes. Images are kept compressed, as a
// dataset on disk is (JPEG, PNG, TFRecord), so a batch costs real, sequential CPU work to load:
// a lossless predictive codec in the spirit of JPEG-LS, small enough to read in one sitting.
//
// Each channel of each pixel is predicted from its already-decoded neighbours of the same
// channel: the left one on the first row, the one above in the first column, elsewhere the
// median edge detector MED(a = left, b = above, c = above-left) = min(a, b) if c >= max(a, b),
// max(a, b) if c <= min(a, b), else a + b - c. The residual (value - prediction, mod 256, taken
// in [-128, 127]) is zig-zag mapped to u in [0, 255] and Golomb-Rice coded with the image's
// parameter k (0..7): q = u >> k zero bits, a one bit, then the k low bits of u; where q would
// reach kEscapeZeros, kEscapeZeros zero bits and the 8 bits of u instead. Bits are packed
// most-significant first; the last byte is zero-padded.
//
// An image's stream is one byte holding k, then its bits. Decoding is bit-serial and branchy,
// like the entropy decoding that dominates JPEG decoding, so its cost is per pixel and real.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gapbench::codec {

// h x w x c uint8 images, HWC layout (as kernels/preprocess.h's ImageShape without the count).
struct ImageFormat {
  std::size_t h = 0, w = 0, c = 0;
  std::size_t bytes() const { return h * w * c; }
};

// A run of zero bits this long starts an escaped (raw 8-bit) residual.
inline constexpr unsigned kEscapeZeros = 24;
inline constexpr unsigned kMaxRiceK = 7;

// Images stored back to back: image i's stream is bytes[offsets[i], offsets[i + 1]).
struct EncodedImages {
  ImageFormat format;
  std::vector<std::uint8_t> bytes;
  std::vector<std::size_t> offsets;  // count() + 1 entries
  std::size_t count() const { return offsets.empty() ? 0 : offsets.size() - 1; }
  // Stored bytes over raw bytes.
  double ratio() const;
};

// `count` seeded synthetic photos-like images: smooth gradients, flat rectangles and a patch of
// noise, so they compress well but not trivially (the noise exercises the escape code).
std::vector<std::uint8_t> synthetic_images(std::size_t count, ImageFormat format,
                                           std::uint64_t seed);

// Encodes `count` images laid out back to back in `pixels`; each image picks the k that makes
// its stream shortest.
EncodedImages encode(const std::uint8_t* pixels, std::size_t count, ImageFormat format);

// Decodes image `index` into `out` (format.bytes() bytes). Throws std::invalid_argument on a bad
// index, a k out of range or a stream that ends early; never reads outside the stream.
void decode(const EncodedImages& images, std::size_t index, std::uint8_t* out);

}  // namespace gapbench::codec
