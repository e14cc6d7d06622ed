/* The GEMM search's file of times (runtime/device/gemm_search_file.c), the
 * lines after its header: whatever parses holds together (each key the size
 * classes of its shape, each slot a time in range or left out, a left-out
 * slot marked for the device), and what is written back parses again into
 * the same classes and the same text. The first byte chooses how many slots
 * a line has. */
#include "fuzz_input.h"
#include "gemm_search_record.h"

static char header[] = "clformer GEMM search times, format 1\nfuzz\n";

static cf_gs_record *record(size_t slots)
{
    cf_gs_record *r = calloc(1, sizeof *r);
    if (!r) abort();
    r->nx = slots; /* the parser counts slots only, not which kind each is */
    r->header = header;
    return r;
}

static void drop(cf_gs_record *r)
{
    free(r->classes);
    free(r);
}

static void check_classes(const cf_gs_record *r)
{
    bool left_out[CF_GS_SLOTS] = {false};
    for (size_t i = 0; i < r->n_classes; i++) {
        const cf_gs_class *c = &r->classes[i];
        if (!c->timed || c->mc != cf_gs_size_class(c->m) || c->nc != cf_gs_size_class(c->n) ||
            c->kc != cf_gs_size_class(c->k) || c->bc != cf_gs_size_class(c->batch) ||
            c->strided != (c->batch > 1))
            abort();
        for (size_t j = 0; j < cf_gs_slots(r); j++) {
            if (c->ms[j] < 0) left_out[j] = true;
            else if (!(c->ms[j] > 0 && c->ms[j] <= 1e9f)) abort();
        }
        if (cf_gs_find((cf_gs_record *)r, c) != c) abort(); /* keys are distinct */
    }
    for (size_t j = 0; j < cf_gs_slots(r); j++)
        if (left_out[j] != r->left_out[j]) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const size_t slots = 1 + data[0] % CF_GS_SLOTS;
    char *body = fuzz_string(data + 1, size - 1);
    cf_gs_record *r = record(slots);
    cf_gs_merge_text(r, body);
    free(body);
    check_classes(r);

    size_t len;
    char *text = cf_gs_times_text(r, &len);
    if (!text || len < sizeof header - 1 || memcmp(text, header, sizeof header - 1)) abort();
    char *again = fuzz_string((const uint8_t *)text, len);
    cf_gs_record *back = record(slots);
    if (cf_gs_merge_text(back, again + sizeof header - 1) != 0 || back->n_classes != r->n_classes)
        abort();
    check_classes(back);
    size_t len2;
    char *text2 = cf_gs_times_text(back, &len2);
    if (!text2 || len2 != len || memcmp(text, text2, len)) abort();
    free(text2);
    free(again);
    free(text);
    drop(back);
    drop(r);
    return 0;
}
