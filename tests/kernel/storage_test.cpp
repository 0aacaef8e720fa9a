// GPU storage types: the dtype -> WGSL scalar mapping and the storages a spec may declare.
#include "kernel/storage.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "spec_test_support.h"

namespace wgml::kernel {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

TEST(SpecStorage, DefaultStorageFollowsTheDesign) {
  const std::pair<DType, const char*> native[] = {
      {DType::Float32, "f32"}, {DType::Float16, "f16"}, {DType::Int32, "i32"}, {DType::UInt32, "u32"}};
  for (const auto& [dtype, scalar] : native) {
    EXPECT_EQ(default_storage(dtype)->scalar, scalar);
    EXPECT_EQ(default_storage(dtype)->kind, StorageKind::Native);
  }
  const std::pair<DType, const char*> widened[] = {
      {DType::Int8, "i32"}, {DType::Int16, "i32"}, {DType::UInt8, "u32"}, {DType::Bool, "u32"}, {DType::BFloat16, "f32"}};
  for (const auto& [dtype, scalar] : widened) {
    EXPECT_EQ(default_storage(dtype)->scalar, scalar);
    EXPECT_EQ(default_storage(dtype)->kind, StorageKind::Widened);
  }
  EXPECT_FALSE(default_storage(DType::Float64).has_value());
  EXPECT_EQ(default_storage(DType::Int64), (StorageType{DType::Int64, StorageKind::Narrowed, "i32"}));
}

TEST(SpecStorage, DeclaredStoragesThatCannotHoldTheTypeAreRejected) {
  EXPECT_THAT(error_of([] { declared_storage(DType::Int64, "packed", "", "x"); }, ErrorCode::Unsupported),
              HasSubstr("'x' (int64) with storage \"packed\": only 8-, 16- and 32-bit types pack into u32 words"));
  EXPECT_EQ(declared_storage(DType::Float32, "packed", "", "s"), *default_storage(DType::Float32));
  EXPECT_EQ(declared_storage(DType::BFloat16, "packed", "", "s"), (StorageType{DType::BFloat16, StorageKind::Packed, "u32"}));
  EXPECT_THAT(error_of([] { declared_storage(DType::Int64, "uint32", "", "i"); }, ErrorCode::Unsupported),
              HasSubstr("a conversion that can lose values needs narrowing: \"checked\""));
  EXPECT_THAT(error_of([] { declared_storage(DType::Float32, "uint32", "checked", "x"); }, ErrorCode::Unsupported),
              HasSubstr("only integer tensors narrow to 32 bits"));
  EXPECT_EQ(declared_storage(DType::UInt32, "uint32", "", "u").kind, StorageKind::Native);
}

}  // namespace
}  // namespace wgml::kernel
