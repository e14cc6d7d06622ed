/*
 * CRC-32C (Castagnoli polynomial, reflected, as in iSCSI and ext4): the
 * checksum of each tensor's bytes that clformer stores in its checkpoints.
 * Chosen over a faster non-cryptographic hash (xxhash) because it needs no
 * dependency, is a fixed public definition any tool can recompute (Python:
 * crc32c / google-crc32c), and detects every burst error up to 32 bits.
 */
#ifndef CF_CRC32C_H
#define CF_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continues `crc` (0 to start) over `size` bytes; cf_crc32c(0, "123456789", 9)
 * is 0xe3069283. */
uint32_t cf_crc32c(uint32_t crc, const void *data, size_t size);

#endif
