#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace goenv {

enum class DeviceKind : std::uint8_t { kCpu = 0, kGpu = 1, kTpu = 2 };
inline constexpr int kNumDeviceKinds = 3;

const char* device_kind_name(DeviceKind kind);
DeviceKind parse_device_kind(std::string_view name);  // "cpu" | "gpu" | "tpu"; NotFound otherwise

}  // namespace goenv
