#pragma once
// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum
// foxrl stores for every tensor it writes and verifies on every load. The
// same function as iSCSI, ext4 and Btrfs use: crc32c("123456789") is
// 0xE3069283.

#include <cstddef>
#include <cstdint>
#include <string>

namespace foxrl {

/// CRC-32C of `size` bytes at `data`, continuing from `crc` (0 to start):
/// crc32c(b, crc32c(a)) == crc32c(a + b).
std::uint32_t crc32c(const void* data, std::size_t size, std::uint32_t crc = 0);

/// `crc` as eight lower-case hex digits, as the files store it.
std::string crc32c_hex(std::uint32_t crc);

}  // namespace foxrl
