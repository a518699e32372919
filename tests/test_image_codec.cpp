#include "kernels/image_codec.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/base/data.h"

namespace gapbench::codec {
namespace {

std::string format_name(ImageFormat f) {
  return std::to_string(f.h) + "x" + std::to_string(f.w) + "x" + std::to_string(f.c);
}

std::vector<std::uint8_t> decode_all(const EncodedImages& enc) {
  std::vector<std::uint8_t> out(enc.count() * enc.format.bytes(), 0xAB);
  for (std::size_t i = 0; i < enc.count(); ++i) decode(enc, i, out.data() + i * enc.format.bytes());
  return out;
}

TEST(ImageCodec, RoundTripsSyntheticImagesExactly) {
  const ImageFormat formats[] = {{1, 1, 1},   {1, 5, 3},   {7, 1, 3},  {9, 13, 1},
                                 {16, 16, 4}, {31, 17, 3}, {64, 64, 3}};
  for (const ImageFormat& f : formats) {
    const auto images = synthetic_images(5, f, 11);
    const EncodedImages enc = encode(images.data(), 5, f);
    ASSERT_EQ(enc.count(), 5u);
    EXPECT_EQ(decode_all(enc), images) << format_name(f);
  }
}

TEST(ImageCodec, RoundTripsNoiseThroughTheEscapeCode) {
  // Uniform random bytes: residuals of every size, most of them escaped.
  const ImageFormat f{12, 10, 3};
  const auto images = random_bytes(3 * f.bytes(), 5, 77);
  const EncodedImages enc = encode(images.data(), 3, f);
  EXPECT_EQ(decode_all(enc), images);
  EXPECT_GT(enc.ratio(), 0.9);  // noise does not compress
}

TEST(ImageCodec, RoundTripsExtremes) {
  // Flat black, flat white, and a checkerboard of 0 and 255 (residuals of +-255 wrap to +-1).
  const ImageFormat f{8, 8, 3};
  std::vector<std::uint8_t> images(3 * f.bytes(), 0);
  for (std::size_t k = 0; k < f.bytes(); ++k) {
    images[f.bytes() + k] = 255;
    const std::size_t x = (k / 3) % 8, y = k / 24;
    images[2 * f.bytes() + k] = ((x + y) % 2) ? 255 : 0;
  }
  const EncodedImages enc = encode(images.data(), 3, f);
  EXPECT_EQ(decode_all(enc), images);
}

TEST(ImageCodec, SyntheticImagesCompressButAreNotTrivial) {
  const ImageFormat f{64, 64, 3};
  const auto images = synthetic_images(16, f, 3);
  const EncodedImages enc = encode(images.data(), 16, f);
  EXPECT_LT(enc.ratio(), 0.6);   // a real stored form: smaller than raw
  EXPECT_GT(enc.ratio(), 0.02);  // but with content to decode
  // Images differ from each other and are not constant.
  EXPECT_NE(std::vector<std::uint8_t>(images.begin(), images.begin() + f.bytes()),
            std::vector<std::uint8_t>(images.begin() + f.bytes(), images.begin() + 2 * f.bytes()));
  std::size_t distinct = 0;
  std::vector<bool> seen(256, false);
  for (std::size_t k = 0; k < f.bytes(); ++k) {
    if (!seen[images[k]]) seen[images[k]] = true, ++distinct;
  }
  EXPECT_GT(distinct, 32u);
}

TEST(ImageCodec, SyntheticImagesAreSeeded) {
  const ImageFormat f{8, 8, 3};
  EXPECT_EQ(synthetic_images(2, f, 1), synthetic_images(2, f, 1));
  EXPECT_NE(synthetic_images(2, f, 1), synthetic_images(2, f, 2));
}

TEST(ImageCodec, RejectsBadInputWithoutReadingPastTheStream) {
  const ImageFormat f{16, 16, 3};
  const auto images = synthetic_images(2, f, 9);
  const EncodedImages good = encode(images.data(), 2, f);
  std::vector<std::uint8_t> out(f.bytes());
  EXPECT_THROW(decode(good, 2, out.data()), std::invalid_argument);

  // Truncated: image 0's stream cut short (its last bytes gone, the vector shrunk to fit, so
  // reading past it would be caught by sanitizers too).
  EncodedImages cut = good;
  cut.bytes.resize(good.offsets[1] / 2);
  cut.bytes.shrink_to_fit();
  cut.offsets = {0, cut.bytes.size()};
  EXPECT_THROW(decode(cut, 0, out.data()), std::invalid_argument);

  // A Rice parameter out of range, an empty stream, offsets past the bytes.
  EncodedImages bad_k = good;
  bad_k.bytes[0] = kMaxRiceK + 1;
  EXPECT_THROW(decode(bad_k, 0, out.data()), std::invalid_argument);
  EncodedImages empty = good;
  empty.offsets = {0, 0};
  EXPECT_THROW(decode(empty, 0, out.data()), std::invalid_argument);
  EncodedImages past = good;
  past.offsets.back() = good.bytes.size() + 1;
  EXPECT_THROW(decode(past, 1, out.data()), std::invalid_argument);
}

TEST(ImageCodec, TruncationMessageNamesTheImage) {
  const ImageFormat f{4, 4, 1};
  const auto images = random_bytes(f.bytes(), 1, 2);
  EncodedImages enc = encode(images.data(), 1, f);
  enc.bytes.resize(2);
  enc.offsets = {0, 2};
  std::vector<std::uint8_t> out(f.bytes());
  try {
    decode(enc, 0, out.data());
    ADD_FAILURE() << "a truncated stream decoded";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("image 0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gapbench::codec
