// The host side of GPU storage: widening, packing and checked narrowing round-trip.
#include "backend/webgpu/host_packing.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "core/half.h"
#include "kernel/spec_test_support.h"

namespace wgml::backend::webgpu {
namespace {

using kernel::declared_storage;
using kernel::default_storage;
using kernel::gpu_buffer_bytes;
using kernel::StorageKind;
using kernel::testing::error_of;
using ::testing::HasSubstr;

template <class T>
Tensor tensor_of(DType dtype, const std::vector<T>& values) {
  return Tensor::from_bytes(dtype, {static_cast<int64_t>(values.size())}, values.data());
}

template <class T>
std::vector<T> words(const std::vector<uint8_t>& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

TEST(HostPacking, WidenedIntegersRoundTrip) {
  const Tensor x = tensor_of<int8_t>(DType::Int8, {-128, -1, 0, 127, 5});
  const StorageType storage = *default_storage(DType::Int8);
  const auto bytes = encode_for_gpu(x, storage, "x");
  EXPECT_EQ(words<int32_t>(bytes), (std::vector<int32_t>{-128, -1, 0, 127, 5}));
  const Tensor back = decode_from_gpu(bytes, storage, x.shape());
  EXPECT_EQ(std::memcmp(back.data(), x.data(), x.nbytes()), 0);

  const Tensor flags = tensor_of<uint8_t>(DType::Bool, {1, 0, 1});
  const auto flag_bytes = encode_for_gpu(flags, *default_storage(DType::Bool), "flags");
  EXPECT_EQ(words<uint32_t>(flag_bytes), (std::vector<uint32_t>{1, 0, 1}));
  EXPECT_EQ(decode_from_gpu(flag_bytes, *default_storage(DType::Bool), {3}).data_as<uint8_t>()[2], 1);
}

// bfloat16 widens to f32 exactly (its bits are the upper half of the f32) and comes back exact.
TEST(HostPacking, BFloat16WidensToF32Exactly) {
  const std::vector<uint16_t> bits = {0x3f80, 0xc049, 0x7f80, 0x0001, 0x8000};  // 1, -3.140625, inf, a subnormal, -0
  const Tensor x = tensor_of<uint16_t>(DType::BFloat16, bits);
  const StorageType storage = *default_storage(DType::BFloat16);
  const auto bytes = encode_for_gpu(x, storage, "x");
  std::vector<uint32_t> expected;
  for (uint16_t b : bits) expected.push_back(uint32_t{b} << 16);
  EXPECT_EQ(words<uint32_t>(bytes), expected);
  const Tensor back = decode_from_gpu(bytes, storage, x.shape());
  EXPECT_EQ(std::memcmp(back.data(), x.data(), x.nbytes()), 0);
}

TEST(HostPacking, NativeAndPackedKeepTheBytesInWholeWords) {
  const Tensor h = tensor_of<uint16_t>(DType::Float16, {float_to_f16(1.5f), float_to_f16(-2.0f), float_to_f16(0.25f)});
  const auto bytes = encode_for_gpu(h, *default_storage(DType::Float16), "h");
  ASSERT_EQ(bytes.size(), 8u);  // 6 bytes rounded up to two words
  EXPECT_EQ(std::memcmp(bytes.data(), h.data(), 6), 0);
  EXPECT_EQ(bytes[6], 0);

  const StorageType packed = declared_storage(DType::Int8, "packed", "", "q");
  EXPECT_EQ(packed.scalar, "u32");
  EXPECT_EQ(packed.kind, StorageKind::Packed);
  const Tensor q = tensor_of<int8_t>(DType::Int8, {1, -2, 3, -4, 5});
  const auto packed_bytes = encode_for_gpu(q, packed, "q");
  EXPECT_EQ(words<uint32_t>(packed_bytes), (std::vector<uint32_t>{0xfc03fe01u, 0x00000005u}));
  const Tensor back = decode_from_gpu(packed_bytes, packed, {5});
  EXPECT_EQ(std::memcmp(back.data(), q.data(), 5), 0);
  EXPECT_EQ(gpu_buffer_bytes(packed, 0), 4u);  // never an empty buffer
}

TEST(HostPacking, CheckedNarrowingNamesTheInputIndexAndValue) {
  const StorageType u32 = declared_storage(DType::Int64, "uint32", "checked", "writeIndices");
  EXPECT_EQ(u32.kind, StorageKind::Narrowed);
  EXPECT_EQ(u32.scalar, "u32");
  EXPECT_EQ(words<uint32_t>(encode_for_gpu(tensor_of<int64_t>(DType::Int64, {0, 7, 4294967295}), u32, "writeIndices")),
            (std::vector<uint32_t>{0, 7, 4294967295u}));
  EXPECT_THAT(
      error_of(
          [&] {
            encode_for_gpu(tensor_of<int64_t>(DType::Int64, {0, 3, -1}), u32, "writeIndices");
          },
          ErrorCode::Runtime),
      HasSubstr("input 'writeIndices': element 2 is -1, outside [0, 4294967295] (int64 stored as u32, narrowing: checked)"));
  EXPECT_THAT(
      error_of([&] { encode_for_gpu(tensor_of<int64_t>(DType::Int64, {4294967296}), u32, "writeIndices"); }, ErrorCode::Runtime),
      HasSubstr("element 0 is 4294967296"));
  const StorageType i32 = declared_storage(DType::Int64, "int32", "checked", "offsets");
  EXPECT_EQ(words<int32_t>(encode_for_gpu(tensor_of<int64_t>(DType::Int64, {-5, 9}), i32, "offsets")),
            (std::vector<int32_t>{-5, 9}));
  const Tensor back = decode_from_gpu(encode_for_gpu(tensor_of<int64_t>(DType::Int64, {-5, 9}), i32, "offsets"), i32, {2});
  EXPECT_EQ(back.data_as<int64_t>()[0], -5);
}

TEST(HostPacking, ValueRangeIsCheckedOnUpload) {
  const StorageType u32 = declared_storage(DType::Int64, "uint32", "checked", "writeIndices");
  const Tensor indices = tensor_of<int64_t>(DType::Int64, {1, 6});
  EXPECT_THAT(error_of(
                  [&] {
                    encode_for_gpu(indices, u32, "writeIndices", ValueRange{0, 5});
                  },
                  ErrorCode::Runtime),
              HasSubstr("input 'writeIndices': element 1 is 6, outside [0, 5] (valueRange)"));
  EXPECT_NO_THROW(encode_for_gpu(indices, u32, "writeIndices", ValueRange{0, 6}));
}

}  // namespace
}  // namespace wgml::backend::webgpu
