/* CRC-32C, slicing by 8 (eight bytes per step, about 1 to 2 GB/s). */
#include "crc32c.h"

#include <pthread.h>

#define POLY 0x82f63b78u /* 0x1edc6f41 bit-reversed */

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

/* table[0] is the plain byte-at-a-time table; table[k][b] is the CRC of b
 * followed by k zero bytes, so eight lookups advance the CRC by eight bytes. */
static void make_table(void)
{
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int i = 0; i < 8; i++) c = (c >> 1) ^ (POLY & (0u - (c & 1u)));
        table[0][b] = c;
    }
    for (uint32_t b = 0; b < 256; b++)
        for (int k = 1; k < 8; k++)
            table[k][b] = (table[k - 1][b] >> 8) ^ table[0][table[k - 1][b] & 0xff];
}

uint32_t cf_crc32c(uint32_t crc, const void *data, size_t size)
{
    pthread_once(&table_once, make_table);
    const unsigned char *p = data;
    uint32_t c = ~crc;
    for (; size >= 8; size -= 8, p += 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                           (uint32_t)p[3] << 24);
        c = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
            table[4][lo >> 24] ^ table[3][p[4]] ^ table[2][p[5]] ^ table[1][p[6]] ^
            table[0][p[7]];
    }
    for (; size > 0; size--, p++) c = (c >> 8) ^ table[0][(c ^ *p) & 0xff];
    return ~c;
}
