// RandomBits with MLX's counter-based threefry-2x32 PRNG (20 rounds), byte for byte: a seed s
// gives the key (s >> 32, s & 0xffffffff) of the seed sign-extended to 64 bits; output words come
// in pairs (i, half + i) from hashing the counter pair, as MLX's CPU kernel lays them out. Without
// a seed the node draws the next key of a per-program key sequence (MLX's global RNG is
// nondeterministic too), seeded once from the system's entropy.
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_backend.h"

namespace wgml::backend::cpu {
namespace {

using runtime::ExecContext;
using runtime::fail;
using Pair = std::pair<uint32_t, uint32_t>;

Pair threefry2x32(const Pair& key, Pair count) {
  static constexpr uint32_t kRotations[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  const uint32_t ks[3] = {key.first, key.second, key.first ^ key.second ^ 0x1BD11BDAu};
  count.first += ks[0];
  count.second += ks[1];
  for (uint32_t i = 0; i < 5; ++i) {
    for (uint32_t r : kRotations[i % 2]) {
      count.first += count.second;
      count.second = (count.second << r) | (count.second >> (32 - r));
      count.second ^= count.first;
    }
    count.first += ks[(i + 1) % 3];
    count.second += ks[(i + 2) % 3] + i + 1;
  }
  return count;
}

// `nbytes` random bytes from one key, in MLX's word order.
std::vector<uint8_t> random_bytes(const Pair& key, size_t nbytes) {
  const size_t words = (nbytes + 3) / 4, half = words / 2;
  const bool even = words % 2 == 0;
  std::vector<uint32_t> out(words);
  Pair count{0, static_cast<uint32_t>(half + (even ? 0 : 1))};
  for (; count.first < half; ++count.first, ++count.second) {
    const Pair r = threefry2x32(key, count);
    out[count.first] = r.first;
    out[count.second] = r.second;
  }
  if (!even) out[half] = threefry2x32(key, Pair{static_cast<uint32_t>(half), 0}).first;
  std::vector<uint8_t> bytes(nbytes);
  if (nbytes) std::memcpy(bytes.data(), out.data(), nbytes);
  return bytes;
}

// MLX's KeySequence: next() splits the key into (new key, subkey) = bits of shape [2, 2].
struct KeySequence {
  bool started = false;
  Pair key;
  Pair next() {
    if (!started) {
      std::random_device entropy;
      key = {entropy(), entropy()};
      started = true;
    }
    std::vector<uint8_t> b = random_bytes(key, 16);
    uint32_t w[4];
    std::memcpy(w, b.data(), 16);
    key = {w[0], w[1]};
    return {w[2], w[3]};
  }
};

void random_bits(const ir::RandomBitsNode& n, ExecContext& ctx) {
  const std::vector<int64_t> dims = ctx.resolve(n.shape);
  Shape shape(dims.begin(), dims.end());
  for (int64_t d : shape)
    if (d < 0) fail("RandomBits: negative dimension");
  DType t;
  switch (n.width) {
    case 1:
      t = DType::UInt8;
      break;
    case 4:
      t = DType::UInt32;
      break;
    case 2:
      fail("RandomBits: width 2 gives uint16, which no wgml tensor holds");
    default:
      fail("RandomBits: width must be 1, 2 or 4, found " + std::to_string(n.width));
  }
  Pair key;
  if (n.seed) {
    const uint64_t seed = static_cast<uint64_t>(static_cast<int64_t>(ctx.int_value(*n.seed)));
    key = {static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(seed)};
  } else {
    key = ctx.persistent_state<KeySequence>().next();
  }
  Tensor out(t, shape);
  const std::vector<uint8_t> bytes = random_bytes(key, out.nbytes());
  if (!bytes.empty()) std::memcpy(out.mutable_data(), bytes.data(), bytes.size());
  ctx.set_tensor(n.out, std::move(out));
}

}  // namespace

void register_random_ops(runtime::KernelTable& t) { t.add<ir::RandomBitsNode, random_bits>(); }

}  // namespace wgml::backend::cpu
