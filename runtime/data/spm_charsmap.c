/* Checking SentencePiece's precompiled character maps (spm_charsmap.h).
 *
 * The map is <trie bytes: u32 little-endian><trie: u32 units><strings>. A
 * trie unit (darts-clone's format) packs: bits 0-7 its label, bit 8 "has a
 * leaf", bit 31 "is a leaf", bits 10-31 an offset (shifted by 8 more when bit
 * 9 is set); a leaf unit's low 31 bits are its value, here the position of a
 * replacement string. A prefix search at position p reads unit p ^ c for the
 * next input byte c, follows it when its label is c (to p ^ c ^ offset), and
 * on "has a leaf" reads the leaf unit there. */
#include "spm_charsmap.h"
#include "status.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* SentencePiece's Normalizer::kMaxTrieResultsSize */
#define MAX_MATCHES 32

static uint32_t unit_at(const unsigned char *trie, size_t i)
{
    const unsigned char *u = trie + 4 * i;
    return (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 24;
}

static uint32_t unit_label(uint32_t u) { return u & (UINT32_C(1) << 31 | 0xFF); }
static bool unit_has_leaf(uint32_t u) { return u >> 8 & 1; }
static uint32_t unit_offset(uint32_t u) { return (u >> 10) << ((u & (UINT32_C(1) << 9)) >> 6); }
static uint32_t unit_value(uint32_t u) { return u & ((UINT32_C(1) << 31) - 1); }

typedef struct {
    size_t base; /* a search position */
    int next;    /* the next input byte to try from it */
    int most;    /* the most leaves on one path below it, so far */
} frame;

/* Depth-first over every position a search can reach from the root. */
static const char *check_trie(const unsigned char *trie, size_t units, const char *strings,
                              size_t n_strings)
{
    if (units == 0) return "its trie is empty";
    unsigned char *state = calloc(units, 1); /* 0 unseen, 1 on the path, 2 done */
    unsigned char *most = calloc(units, 1);  /* per done position: its frame's `most` */
    frame *stack = malloc(units * sizeof *stack);
    const char *bad = state && most && stack ? NULL : "out of host memory";
    size_t depth = 0;
    if (!bad) stack[depth++] = (frame){unit_offset(unit_at(trie, 0)), 0, 0};
    bool entering = true;
    while (!bad && depth > 0) {
        frame *f = &stack[depth - 1];
        if (entering) {
            if ((f->base | 0xFF) >= units) {
                bad = "a trie position lies outside the trie";
                break;
            }
            state[f->base] = 1;
            entering = false;
        }
        if (f->next > 0xFF) { /* every byte tried: done */
            state[f->base] = 2;
            most[f->base] = (unsigned char)f->most;
            depth--;
            if (depth > 0) { /* back in the parent: count this edge */
                frame *parent = &stack[depth - 1];
                uint32_t u = unit_at(trie, parent->base ^ (size_t)(parent->next - 1));
                int leaves = f->most + unit_has_leaf(u);
                if (leaves > parent->most) parent->most = leaves > MAX_MATCHES ? MAX_MATCHES + 1 : leaves;
            }
            continue;
        }
        const int c = f->next++;
        const size_t pos = f->base ^ (size_t)c;
        const uint32_t u = unit_at(trie, pos);
        if (unit_label(u) != (uint32_t)c) continue;
        const size_t child = pos ^ unit_offset(u);
        if (child >= units) {
            bad = "a trie position lies outside the trie";
            break;
        }
        if (unit_has_leaf(u)) {
            uint32_t v = unit_value(unit_at(trie, child));
            if (v >= n_strings || !memchr(strings + v, '\0', n_strings - v)) {
                bad = "a replacement lies outside its strings";
                break;
            }
        }
        if (state[child] == 1) {
            bad = "its trie has a cycle";
            break;
        }
        if (state[child] == 2) {
            int leaves = most[child] + unit_has_leaf(u);
            if (leaves > f->most) f->most = leaves > MAX_MATCHES ? MAX_MATCHES + 1 : leaves;
            continue;
        }
        stack[depth++] = (frame){child, 0, 0};
        entering = true;
    }
    if (!bad && stack && most[unit_offset(unit_at(trie, 0))] > MAX_MATCHES)
        bad = "an input can match more than 32 of its rules";
    free(state);
    free(most);
    free(stack);
    return bad;
}

static const char *check_map(const unsigned char *map, size_t size)
{
    if (size <= 4) return "it is shorter than its header";
    const size_t trie_size = unit_at(map, 0);
    if (trie_size > size - 4) return "its trie is longer than the map";
    return check_trie(map + 4, trie_size / 4, (const char *)map + 4 + trie_size,
                      size - 4 - trie_size);
}

/* ---- just enough of protobuf's wire format to find the maps ---- */

typedef struct {
    const unsigned char *p, *end;
} reader;

static bool read_varint(reader *r, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64 && r->p < r->end; shift += 7) {
        unsigned char b = *r->p++;
        *v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) return true;
    }
    return false;
}

/* The next field: its number, wire type and, for length-delimited ones, its
 * bytes. False at the end or on a framing error (*broken set). */
static bool next_field(reader *r, uint32_t *field, int *type, reader *bytes, bool *broken)
{
    if (r->p == r->end) return false;
    uint64_t key, len;
    *broken = true;
    if (!read_varint(r, &key)) return false;
    *field = (uint32_t)(key >> 3);
    *type = (int)(key & 7);
    switch (*type) {
    case 0: if (!read_varint(r, &len)) return false; break;
    case 1: if (r->end - r->p < 8) return false; r->p += 8; break;
    case 5: if (r->end - r->p < 4) return false; r->p += 4; break;
    case 2:
        if (!read_varint(r, &len) || len > (uint64_t)(r->end - r->p)) return false;
        *bytes = (reader){r->p, r->p + len};
        r->p += len;
        break;
    default: return false; /* groups: no SentencePiece model uses them */
    }
    *broken = false;
    return true;
}

clformer_status cf_spm_check_charsmaps(const void *model, size_t size, const char *origin)
{
    reader r = {model, (const unsigned char *)model + size}, spec, map;
    uint32_t field;
    int type;
    bool broken = false;
    /* ModelProto: normalizer_spec = 3, denormalizer_spec = 5 */
    while (next_field(&r, &field, &type, &spec, &broken)) {
        if (type != 2 || (field != 3 && field != 5)) continue;
        const bool denormalizer = field == 5;
        bool spec_broken = false;
        /* NormalizerSpec: precompiled_charsmap = 2 */
        while (next_field(&spec, &field, &type, &map, &spec_broken)) {
            if (type != 2 || field != 2 || map.p == map.end) continue;
            const char *bad = check_map(map.p, (size_t)(map.end - map.p));
            if (bad)
                return cf_fail(CLFORMER_ERR_FORMAT, "%s is a damaged SentencePiece model: the "
                               "character map of its %snormalizer is unusable (%s); give the "
                               "FILE.model written by spm_train or clformer train --tokenizer spm",
                               origin, denormalizer ? "de" : "", bad);
        }
        if (spec_broken) broken = true;
    }
    if (broken)
        return cf_fail(CLFORMER_ERR_FORMAT, "%s is not a SentencePiece model (its protobuf "
                       "framing is broken): give a FILE.model written by spm_train or by "
                       "clformer train --tokenizer spm", origin);
    return CLFORMER_OK;
}
