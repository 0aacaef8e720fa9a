#include "gpu/recorder.h"

#include <cstring>

#include "gpu/gpu_error.h"
#include "gpu/webgpu_strings.h"

namespace wgml::gpu {
namespace {

// Bind groups kept for reuse; past this many the cache starts over (recorded commands hold
// their own references, so dropping ours is always safe).
constexpr size_t kMaxCachedBindGroups = 4096;

[[noreturn]] void invalid(std::string_view op, const std::string& detail) {
  throw GpuError(GpuErrorKind::Validation, op, detail);
}

void check_copy_alignment(const BufferRange& range, std::string_view op, const char* what) {
  if (range.offset % 4 != 0 || range.size % 4 != 0)
    invalid(op, std::string(what) + " offset " + std::to_string(range.offset) + " and size " + std::to_string(range.size) +
                    " must be multiples of 4 bytes");
}

}  // namespace

size_t Recorder::KeyHash::operator()(const std::vector<uint64_t>& key) const {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint64_t word : key) h = (h ^ word) * 0x100000001b3ull;
  return size_t(h ^ (h >> 32));
}

Recorder::Recorder(Device& device, BufferPool& pool, const RecorderOptions& options, Profiler* profiler)
    : device_(device), pool_(pool), options_(options), profiler_(profiler), ring_(device, options.uniform_ring_bytes) {
  if (options_.dispatches_per_submit == 0 || options_.readback_chunk_bytes < 4)
    throw Error(ErrorCode::InvalidArgument,
                "recorder options: dispatches_per_submit and readback_chunk_bytes must be "
                "positive (readback chunks at least 4 bytes)");
  options_.readback_chunk_bytes -= options_.readback_chunk_bytes % 4;
}

Recorder::~Recorder() {
  drop_recording();
  for (auto& [key, group] : bind_groups_) device_.fn().BindGroupRelease(group);
}

// ---- dispatches ------------------------------------------------------------------------------

void Recorder::dispatch(const Kernel& kernel, std::span<const BufferRange> buffers, std::span<const std::byte> params,
                        uint64_t workgroups, std::string_view op) {
  Grid grid;
  try {
    grid = fold_workgroups(workgroups, device_.limits().maxComputeWorkgroupsPerDimension);
  } catch (const GpuError& e) {
    throw GpuError(e.kind(), op, e.detail());
  }
  dispatch(kernel, buffers, params, grid, op);
}

void Recorder::dispatch(const Kernel& kernel, std::span<const BufferRange> buffers, std::span<const std::byte> params, Grid grid,
                        std::string_view op) {
  check_bindings(kernel, buffers, params, op);
  grid = check_grid(grid, op);
  if (grid.workgroups() == 0) return;
  const bool op_passes = profiler_ && !profiler_->timestamps_inside_passes();
  if (profiler_ && !profiler_->has_room(op_passes || pass_ ? 1 : 2)) submit();
  const uint32_t params_offset = kernel.spec.params_size ? push_params(params, op) : 0;
  const WGPUBindGroup group = bind_group(kernel, buffers, op);

  const api::Functions& fn = device_.fn();
  if (op_passes) {
    end_pass();
    begin_pass(op, TimingKind::Op);
  } else if (!pass_) {
    begin_pass("pass " + std::to_string(passes_begun_ + 1), TimingKind::Pass);
  }
  if (pipeline_in_pass_ != &kernel) {
    fn.ComputePassEncoderSetPipeline(pass_, kernel.pipeline);
    pipeline_in_pass_ = &kernel;
  }
  if (kernel.spec.params_size) {
    fn.ComputePassEncoderSetBindGroup(pass_, 0, group, 1, &params_offset);
    group_in_pass_ = nullptr;  // the next dispatch's offset differs
  } else if (group != group_in_pass_) {
    fn.ComputePassEncoderSetBindGroup(pass_, 0, group, 0, nullptr);
    group_in_pass_ = group;
  }
  const bool timed = profiler_ && !op_passes;
  if (timed) profiler_->write_op_start(pass_, std::string(op));
  fn.ComputePassEncoderDispatchWorkgroups(pass_, grid.x, grid.y, grid.z);
  if (timed) profiler_->write_op_end(pass_);
  if (op_passes) end_pass();

  note_op(op);
  ++dispatches_recorded_;
  ++traffic_.dispatches;
  if (options_.policy == SubmitPolicy::EveryNDispatches && dispatches_recorded_ >= options_.dispatches_per_submit) submit();
}

void Recorder::check_bindings(const Kernel& kernel, std::span<const BufferRange> buffers, std::span<const std::byte> params,
                              std::string_view op) const {
  const KernelSource& spec = kernel.spec;
  if (buffers.size() != spec.bindings.size())
    invalid(op, "kernel '" + spec.label + "' has " + std::to_string(spec.bindings.size()) +
                    " storage bindings, the dispatch gives " + std::to_string(buffers.size()));
  if (params.size() != spec.params_size)
    invalid(op, "kernel '" + spec.label + "' takes " + std::to_string(spec.params_size) +
                    " bytes of parameters, the dispatch gives " + std::to_string(params.size()));
  const WGPULimits& limits = device_.limits();
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferRange& b = buffers[i];
    // Built only for a message: this loop runs for every dispatch.
    auto where = [&] { return "binding " + std::to_string(i) + " of kernel '" + spec.label + "'"; };
    if (!b.buffer || b.size == 0 || b.size % 4 != 0)
      invalid(op, where() + " needs a buffer and a size that is a positive multiple of 4 (size " + std::to_string(b.size) + ")");
    if (b.offset % limits.minStorageBufferOffsetAlignment != 0)
      invalid(op, where() + ": offset " + std::to_string(b.offset) + " is not a multiple of minStorageBufferOffsetAlignment (" +
                      std::to_string(limits.minStorageBufferOffsetAlignment) + ")");
    if (b.size > limits.maxStorageBufferBindingSize)
      throw GpuError(GpuErrorKind::TooLarge, op,
                     where() + ": " + std::to_string(b.size) + " bytes is above maxStorageBufferBindingSize (" +
                         std::to_string(limits.maxStorageBufferBindingSize) + ")");
    for (size_t j = 0; j < i; ++j)
      if (buffers[j].id == b.id && spec.bindings[j] != spec.bindings[i])
        invalid(op, "bindings " + std::to_string(j) + " and " + std::to_string(i) + " of kernel '" + spec.label +
                        "' bind one buffer both read-only and writable, which WebGPU forbids "
                        "within a dispatch; bind it once as read_write");
  }
}

Grid Recorder::check_grid(Grid grid, std::string_view op) const {
  const uint32_t max = device_.limits().maxComputeWorkgroupsPerDimension;
  if (grid.x > max || grid.y > max || grid.z > max)
    throw GpuError(GpuErrorKind::TooLarge, op,
                   "grid " + std::to_string(grid.x) + "x" + std::to_string(grid.y) + "x" + std::to_string(grid.z) +
                       " exceeds maxComputeWorkgroupsPerDimension (" + std::to_string(max) +
                       "); give a workgroup count to have it folded");
  return grid;
}

uint32_t Recorder::push_params(std::span<const std::byte> params, std::string_view op) {
  if (auto offset = ring_.push(params, op)) return *offset;
  submit();  // the ring is full for this submission; the next one starts it over
  return ring_.push(params, op).value();
}

WGPUBindGroup Recorder::bind_group(const Kernel& kernel, std::span<const BufferRange> buffers, std::string_view op) {
  key_.clear();
  key_.push_back(reinterpret_cast<uintptr_t>(kernel.bind_group_layout));
  for (const BufferRange& b : buffers) key_.insert(key_.end(), {b.id, b.offset, b.size});
  const BufferRange params = ring_.binding(kernel.spec.params_size);
  if (kernel.spec.params_size) key_.insert(key_.end(), {params.id, params.size});
  if (auto found = bind_groups_.find(key_); found != bind_groups_.end()) return found->second;

  if (bind_groups_.size() >= kMaxCachedBindGroups) {
    for (auto& [key, group] : bind_groups_) device_.fn().BindGroupRelease(group);
    bind_groups_.clear();
    group_in_pass_ = nullptr;
  }
  std::vector<WGPUBindGroupEntry> entries;
  for (size_t i = 0; i < buffers.size(); ++i)
    entries.push_back({nullptr, uint32_t(i), buffers[i].buffer, buffers[i].offset, buffers[i].size, nullptr, nullptr});
  if (kernel.spec.params_size)
    entries.push_back({nullptr, uint32_t(buffers.size()), params.buffer, 0, params.size, nullptr, nullptr});
  WGPUBindGroupDescriptor desc{};
  desc.label = view(op);
  desc.layout = kernel.bind_group_layout;
  desc.entryCount = entries.size();
  desc.entries = entries.data();
  const std::string what = "binding the buffers of " + std::string(op);
  Device::ErrorScope scope(device_, what);
  WGPUBindGroup group = device_.fn().DeviceCreateBindGroup(device_.handle(), &desc);
  try {
    scope.close();
  } catch (...) {
    if (group) device_.fn().BindGroupRelease(group);
    throw;
  }
  ++bind_groups_created_;
  bind_groups_.emplace(key_, group);
  return group;
}

void Recorder::note_op(std::string_view op) {
  if (first_op_.empty()) first_op_ = op;
  last_op_ = op;
}

// ---- encoder and passes ----------------------------------------------------------------------

void Recorder::begin_encoding() {
  if (encoder_) return;
  scope_.emplace(device_, "recording GPU commands");
  WGPUCommandEncoderDescriptor desc{};
  desc.label = view("wgml");
  encoder_ = device_.fn().DeviceCreateCommandEncoder(device_.handle(), &desc);
  device_.set_unsubmitted_work(true);
}

void Recorder::begin_pass(std::string_view name, TimingKind kind) {
  begin_encoding();
  WGPUComputePassDescriptor desc{};
  WGPUPassTimestampWrites writes{};
  if (profiler_) {
    writes = profiler_->begin_pass(std::string(name), kind);
    desc.timestampWrites = &writes;
  }
  pass_ = device_.fn().CommandEncoderBeginComputePass(encoder_, &desc);
  pipeline_in_pass_ = nullptr;
  group_in_pass_ = nullptr;
  ++passes_begun_;
}

void Recorder::end_pass() {
  if (!pass_) return;
  device_.fn().ComputePassEncoderEnd(pass_);
  device_.fn().ComputePassEncoderRelease(pass_);
  pass_ = nullptr;
}

void Recorder::drop_recording() {
  end_pass();
  if (encoder_) device_.fn().CommandEncoderRelease(encoder_);
  encoder_ = nullptr;
  scope_.reset();  // pops the recording's error scope, dropping its errors
  start_next_submission();
}

void Recorder::start_next_submission() {
  device_.set_unsubmitted_work(false);
  dispatches_recorded_ = 0;
  first_op_.clear();
  last_op_.clear();
}

void Recorder::submit() {
  if (!encoder_) return;
  const api::Functions& fn = device_.fn();
  end_pass();
  if (profiler_) profiler_->resolve(encoder_);
  ring_.upload();
  const WGPUCommandBuffer commands = fn.CommandEncoderFinish(encoder_, nullptr);
  fn.CommandEncoderRelease(encoder_);
  encoder_ = nullptr;
  // Kept in a member whose capacity the first submissions set: a steady step builds no string.
  submit_label_.clear();
  if (first_op_.empty())
    submit_label_ = "submitting copies";
  else
    submit_label_.append("submitting the dispatches from '").append(first_op_).append("' to '").append(last_op_).append("'");
  const std::string& op = submit_label_;
  try {
    // wgpu-native aborts the process when given an invalid command buffer, so errors are
    // checked here and such commands are never submitted.
    scope_->close();
  } catch (...) {
    if (commands) fn.CommandBufferRelease(commands);
    drop_recording();
    throw;
  }
  scope_.reset();
  device_.submit(commands, op);
  start_next_submission();
  ++submissions_;
}

void Recorder::finish() {
  submit();
  device_.wait_idle("waiting for the GPU");
}

// ---- transfers -------------------------------------------------------------------------------

void Recorder::upload(const BufferRange& destination, std::span<const std::byte> bytes, std::string_view op) {
  if (bytes.empty()) return;
  traffic_.bytes_uploaded += bytes.size();
  const uint64_t padded_size = align_up(bytes.size(), 4);
  if (destination.offset % 4 != 0 || padded_size > destination.size)
    invalid(op, "an upload of " + std::to_string(bytes.size()) + " bytes at offset " + std::to_string(destination.offset) +
                    " into a range of " + std::to_string(destination.size) +
                    " bytes (the offset must be a multiple of 4, the data padded to 4 must fit)");
  std::vector<std::byte> padded;
  const std::byte* data = bytes.data();
  if (padded_size != bytes.size()) {
    padded.assign(bytes.begin(), bytes.end());
    padded.resize(padded_size);
    data = padded.data();
  }
  const api::Functions& fn = device_.fn();
  Device::ErrorScope scope(device_, op);
  if (!encoder_) {
    // Nothing recorded: a queue write lands before every later submission, as it should.
    fn.QueueWriteBuffer(device_.queue(), destination.buffer, destination.offset, data, padded_size);
  } else {
    // A queue write would land before the recorded commands; stage it and copy in order.
    // The staging buffer returns to the pool at once; its fence holds it until the copy ran.
    PooledBuffer staging = pool_.acquire(padded_size, BufferKind::Staging, op);
    fn.QueueWriteBuffer(device_.queue(), staging.handle(), 0, data, padded_size);
    end_pass();
    fn.CommandEncoderCopyBufferToBuffer(encoder_, staging.handle(), 0, destination.buffer, destination.offset, padded_size);
  }
  scope.close();
}

void Recorder::copy(const BufferRange& source, const BufferRange& destination, std::string_view op) {
  check_copy_alignment(source, op, "copy source");
  check_copy_alignment(destination, op, "copy destination");
  if (source.size != destination.size)
    invalid(op, "copy of " + std::to_string(source.size) + " bytes into a range of " + std::to_string(destination.size));
  if (source.size == 0) return;
  begin_encoding();
  end_pass();
  device_.fn().CommandEncoderCopyBufferToBuffer(encoder_, source.buffer, source.offset, destination.buffer, destination.offset,
                                                source.size);
}

std::vector<std::byte> Recorder::read(const BufferRange& source, std::string_view op) {
  std::vector<std::byte> out(source.size);
  read(source, out, op);
  return out;
}

void Recorder::read(const BufferRange& source, std::span<std::byte> out, std::string_view op) {
  check_copy_alignment(source, op, "readback");
  if (out.size() != source.size)
    invalid(op, "a readback of " + std::to_string(source.size) + " bytes into " + std::to_string(out.size()));
  traffic_.bytes_read += source.size;
  for (uint64_t done = 0; done < source.size; done += options_.readback_chunk_bytes) {
    const uint64_t size = std::min(options_.readback_chunk_bytes, source.size - done);
    read_chunk({source.buffer, source.id, source.offset + done, size}, out.data() + done, op);
  }
}

Recorder::PendingRead Recorder::start_read(const BufferRange& source, std::string_view op) {
  check_copy_alignment(source, op, "readback");
  if (source.size > options_.readback_chunk_bytes)
    invalid(op, "a readback of " + std::to_string(source.size) + " bytes started ahead (at most " +
                    std::to_string(options_.readback_chunk_bytes) + ")");
  traffic_.bytes_read += source.size;
  PendingRead read{pool_.acquire(source.size, BufferKind::Readback, op), 0};
  begin_encoding();
  end_pass();
  device_.fn().CommandEncoderCopyBufferToBuffer(encoder_, source.buffer, source.offset, read.staging.handle(), 0, source.size);
  submit();
  read.serial = device_.last_submitted();
  return read;
}

std::vector<std::byte> Recorder::finish_read(PendingRead& read, std::string_view op) {
  std::vector<std::byte> out(read.staging.size());
  finish_read(read, out, op);
  return out;
}

void Recorder::finish_read(PendingRead& read, std::span<std::byte> out, std::string_view op) {
  if (!read.staging) invalid(op, "a readback finished twice");
  const uint64_t size = read.staging.size();
  if (out.size() != size) invalid(op, "a readback of " + std::to_string(size) + " bytes into " + std::to_string(out.size()));
  device_.wait(read.serial, op);
  const api::Functions& fn = device_.fn();
  map_for_reading(device_, read.staging.handle(), size, op);
  std::memcpy(out.data(), fn.BufferGetConstMappedRange(read.staging.handle(), 0, size), size);
  fn.BufferUnmap(read.staging.handle());
  read.staging.reset_after(read.serial);
  device_.check(op);
}

void Recorder::read_chunk(const BufferRange& source, std::byte* out, std::string_view op) {
  PooledBuffer staging = pool_.acquire(source.size, BufferKind::Readback, op);
  begin_encoding();
  end_pass();
  const api::Functions& fn = device_.fn();
  fn.CommandEncoderCopyBufferToBuffer(encoder_, source.buffer, source.offset, staging.handle(), 0, source.size);
  submit();
  map_for_reading(device_, staging.handle(), source.size, op);
  std::memcpy(out, fn.BufferGetConstMappedRange(staging.handle(), 0, source.size), source.size);
  fn.BufferUnmap(staging.handle());
  device_.check(op);
}

}  // namespace wgml::gpu
